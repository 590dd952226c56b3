//! Scenario 6 of issue 22 (docs/replication.md): a power loss of the whole ISR at once. The
//! three nodes are killed with SIGKILL together while producers run, then every `.log` file
//! (the partitions' and the metadata quorum's) is cut to the length its last fsync made durable,
//! as `SEGLOG_FSYNC_TRACE` recorded it (a file never fsynced to nothing): what a power loss at
//! that moment could leave. Under `group-commit` and `fsync-every-append` no acknowledged
//! record may be lost; under `page-cache` (Kafka's default) the loss is counted and printed.

#![allow(clippy::unwrap_used, reason = "a test: a failed call is the failure")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::admin::{NewTopic, TopicReplication};

use crate::cluster::poll_until;
use crate::cluster_clients::{Cluster, create_topics};
use crate::replication::{Checker, isrs, produce_acked, properties};

const PARTITIONS: i32 = 2;
/// The topics, each with its durability mode.
const TOPICS: [(&str, &str); 3] = [
    ("durable-group", "group-commit"),
    ("durable-every", "fsync-every-append"),
    ("cached", "page-cache"),
];

/// Each file's last durable length in the trace (`<length> <path>` lines).
fn durable_lengths(trace: &Path) -> BTreeMap<PathBuf, u64> {
    let text = std::fs::read_to_string(trace).unwrap_or_default();
    let mut lengths = BTreeMap::new();
    for line in text.lines() {
        let Some((len, path)) = line.split_once(' ') else { continue };
        lengths.insert(PathBuf::from(path), len.parse().unwrap());
    }
    lengths
}

/// Cuts every `.log` file under `dir` (a node's data or metadata directory, recursively) to its last durable length, or to nothing
/// when it was never fsynced; returns (files cut, bytes cut) per partition directory name.
fn cut_to_last_fsync(dir: &Path, durable: &BTreeMap<PathBuf, u64>) -> BTreeMap<String, (u32, u64)> {
    let mut cut: BTreeMap<String, (u32, u64)> = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let absolute = std::path::absolute(&path).unwrap();
            let len = std::fs::metadata(&path).unwrap().len();
            let keep = durable.get(&absolute).copied().unwrap_or(0).min(len);
            if keep < len {
                std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(keep).unwrap();
                let partition = at.file_name().unwrap().to_string_lossy().into_owned();
                let entry = cut.entry(partition).or_default();
                entry.0 += 1;
                entry.1 += len - keep;
            }
        }
    }
    cut
}

/// One producer thread per topic, in chunks of 1000 until `stop`: (next id, unacknowledged).
fn spawn_writers(
    bootstraps: &str,
    stop: &Arc<AtomicBool>,
    checkers: &[Arc<Mutex<Checker>>],
) -> Vec<std::thread::JoinHandle<(u64, usize)>> {
    TOPICS
        .iter()
        .zip(checkers)
        .map(|((topic, _), checker)| {
            let (checker, stop, bootstraps) =
                (Arc::clone(checker), Arc::clone(stop), bootstraps.to_owned());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Runtime::new().unwrap();
                let (mut next, mut unacknowledged) = (0u64, 0usize);
                while !stop.load(Ordering::SeqCst) {
                    let chunk = (next, next + 1000);
                    unacknowledged +=
                        runtime.block_on(produce_acked(&bootstraps, topic, chunk, &checker));
                    next += 1000;
                }
                (next, unacknowledged)
            })
        })
        .collect()
}

/// The power loss: the three processes killed at once while the producers write, then every
/// log cut to its last fsync. Returns each topic's acknowledged count then and what was cut.
fn power_loss(
    cluster: &Cluster,
    trace: &Path,
    stop: &AtomicBool,
    checkers: &[Arc<Mutex<Checker>>],
) -> (Vec<usize>, BTreeMap<String, (u32, u64)>) {
    let pids: Vec<String> = (1..=3)
        .map(|n| std::fs::read_to_string(cluster.dir.join(format!("node-{n}/pid"))).unwrap())
        .map(|pid| pid.trim().to_owned())
        .collect();
    let killed = std::process::Command::new("kill").arg("-9").args(&pids).status().unwrap();
    assert!(killed.success());
    stop.store(true, Ordering::SeqCst);
    poll_until("the nodes gone", Duration::from_secs(30), String::new, || {
        pids.iter().all(|pid| !Path::new(&format!("/proc/{pid}")).exists())
    });
    let acked_at_loss: Vec<usize> =
        checkers.iter().map(|c| c.lock().unwrap().acked_count()).collect();
    let durable = durable_lengths(trace);
    let mut cut = BTreeMap::new();
    for (node, dir) in (1..=3).flat_map(|n| [(n, "data"), (n, "metadata")]) {
        for (partition, files_bytes) in
            cut_to_last_fsync(&cluster.dir.join(format!("node-{node}/{dir}")), &durable)
        {
            cut.insert(format!("node {node} {partition}"), files_bytes);
        }
    }
    (acked_at_loss, cut)
}

/// Scenario 6: the whole ISR loses power while producers write three topics, one per durability
/// mode (RF=3, `min.insync.replicas`=2, idempotent acks=all). After the restart the fsync modes'
/// checkers are clean; page-cache's loss is printed.
#[test]
fn a_power_loss_of_the_whole_isr_loses_nothing_acknowledged_under_the_fsync_modes() {
    let root = tempfile::tempdir().unwrap();
    let trace = std::path::absolute(root.path().join("fsync-trace")).unwrap();
    let extra = properties(
        root.path(),
        "broker.session.timeout.ms=2000\nbroker.heartbeat.interval.ms=250\n",
    );
    let (cluster, _) = Cluster::up_with_env(
        root.path(),
        &["--extra-properties", extra.to_str().unwrap()],
        vec![(
            seglog_storage::io::FSYNC_TRACE_ENV.to_owned(),
            trace.to_string_lossy().into_owned(),
        )],
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let topics: Vec<NewTopic<'_>> = TOPICS
        .iter()
        .map(|(name, mode)| {
            NewTopic::new(name, PARTITIONS, TopicReplication::Fixed(3))
                .set("min.insync.replicas", "2")
                .set("seglog.durability", mode)
        })
        .collect();
    create_topics(&runtime, &cluster.bootstrap(1), &topics.iter().collect::<Vec<_>>());
    for (topic, _) in TOPICS {
        crate::replication::wait_for_full_isrs(&cluster, topic, PARTITIONS);
    }
    let bootstraps = (1..=3).map(|n| cluster.bootstrap(n)).collect::<Vec<_>>().join(",");
    let stop = Arc::new(AtomicBool::new(false));
    let checkers: Vec<Arc<Mutex<Checker>>> =
        TOPICS.iter().map(|_| Arc::new(Mutex::new(Checker::default()))).collect();
    let writers = spawn_writers(&bootstraps, &stop, &checkers);
    poll_until(
        "5000 records acknowledged on each topic",
        Duration::from_mins(1),
        || cluster.logs(),
        || checkers.iter().all(|c| c.lock().unwrap().acked_count() >= 5000),
    );
    let (acked_at_loss, cut) = power_loss(&cluster, &trace, &stop, &checkers);
    let restarted = Instant::now();
    for node in ["1", "2", "3"] {
        let (ok, text) = cluster.run(&["start", node]);
        assert!(ok, "{text}");
    }
    for (topic, _) in TOPICS {
        poll_until(
            "every partition led again",
            Duration::from_mins(1),
            || cluster.logs(),
            || {
                let isrs = isrs(&bootstraps, topic);
                isrs.len() == PARTITIONS as usize && isrs.values().all(|(leader, _)| *leader > 0)
            },
        );
    }
    let available_after = restarted.elapsed();
    // The producers' last chunks end (acknowledged by the restarted cluster, or timed out).
    let sent: Vec<(u64, usize)> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    println!(
        "scenario 6: power loss cut (files, bytes) {cut:?}; leaders again after {available_after:?}"
    );
    for (((topic, mode), checker), ((sent, unacknowledged), at_loss)) in
        TOPICS.iter().zip(&checkers).zip(sent.iter().zip(&acked_at_loss))
    {
        let report = checker.lock().unwrap().check(&bootstraps, topic, PARTITIONS);
        println!(
            "scenario 6: {topic} ({mode}): {sent} sent, {at_loss} acknowledged before the power \
             loss, {unacknowledged} never acknowledged; checker {report:?}"
        );
        if *mode != "page-cache" {
            assert!(report.clean(), "{topic} ({mode}): {report:?}\n{}", cluster.logs());
            assert!(report.acked >= *at_loss, "{report:?}");
        }
    }
}

/// One run of the last-member-standing window (`an_eligible_replica_leads_when_the_last_isr_member_loses_power`) with the ELR on
/// or off: the checker's report once the partition has a leader again and a full ISR, the
/// bytes the power loss cut, and (ELR on) how long after the kill another replica led. `None`
/// when network namespaces cannot be made here.
fn last_member_loses_power(
    elr: bool,
) -> Option<(crate::replication::Report, u64, Option<Duration>)> {
    use crate::cluster_faults::BROKER_PORT;
    use crate::replication::{Namespaced, isr_of, story};
    const TOPIC: &str = "standing";
    let extra = format!(
        "broker.session.timeout.ms=2000\nbroker.heartbeat.interval.ms=250\n\
         replica.lag.time.max.ms=3000\neligible.leader.replicas.enable={elr}\n"
    );
    // One partition, RF=3, `min.insync.replicas`=2, Kafka's durability (page-cache).
    let mut cluster = Namespaced::up(TOPIC, &extra)?;
    let checker = Mutex::new(Checker::default());
    let failed =
        cluster.runtime.block_on(produce_acked(&cluster.bootstrap, TOPIC, (0, 2000), &checker));
    assert_eq!(failed, 0, "every record acknowledged by the full ISR");
    let (leader, _) = isr_of(&cluster.bootstrap, TOPIC);
    let leader_id = u32::try_from(leader).unwrap();
    let followers: Vec<u32> = (1..=3).filter(|n| *n != leader_id).collect();
    // The followers' fetches dropped (the quorum's traffic passes): the ISR shrinks to the
    // leader alone, below the minimum.
    cluster.net.block_port_from(leader_id, &followers, BROKER_PORT);
    poll_until(
        "the ISR down to its leader",
        Duration::from_secs(30),
        || story(&cluster.nodes),
        || isr_of(&cluster.bootstrap, TOPIC) == (leader, vec![leader]),
    );
    // The last ISR member loses power: SIGKILL, then its logs cut to their last fsync.
    let node = &mut cluster.nodes[usize::try_from(leader - 1).unwrap()];
    node.kill();
    let durable = durable_lengths(&node.dir.join("fsync-trace"));
    let cut: u64 = cut_to_last_fsync(&node.dir.join("data"), &durable).values().map(|c| c.1).sum();
    cluster.net.heal(leader_id);
    let majority = cluster.majority(leader);
    let mut elected = None;
    if elr {
        elected = Some(poll_until(
            "an eligible replica leads",
            Duration::from_secs(30),
            || story(&cluster.nodes),
            || {
                let (now, _) = isr_of(&majority, TOPIC);
                now > 0 && now != leader
            },
        ));
    } else {
        // Fenced, the last member stays the ISR: nobody else may lead.
        poll_until("the partition without a leader", Duration::from_secs(30), String::new, || {
            isr_of(&majority, TOPIC) == (-1, vec![leader])
        });
    }
    cluster.nodes[usize::try_from(leader - 1).unwrap()].start();
    poll_until(
        "a full ISR again",
        Duration::from_mins(1),
        || story(&cluster.nodes),
        || {
            let (now, isr) = isr_of(&cluster.bootstrap, TOPIC);
            now > 0 && isr.len() == 3
        },
    );
    let report = checker.lock().unwrap().check(&cluster.bootstrap, TOPIC, 1);
    Some((report, cut, elected))
}

/// KIP-966's window, on real processes: RF=3, `min.insync.replicas`=2, `page-cache`. The
/// followers' fetches are cut, so the ISR shrinks to the leader alone; then the leader loses
/// power (SIGKILL, its logs cut to their last fsync: all of them, under page-cache). With
/// eligible leader replicas, a follower that left the ISR below the minimum leads at once,
/// with every acknowledged record: the checker is clean. Without them (Kafka before KIP-966),
/// nobody else may lead; the old leader comes back with an empty log, leads, and the others
/// truncate to it: the acknowledged records are lost, which the test also asserts.
#[test]
fn an_eligible_replica_leads_when_the_last_isr_member_loses_power() {
    let Some((with, cut, elected)) = last_member_loses_power(true) else { return };
    println!(
        "ELR on: an eligible replica led {elected:?} after the kill; the power loss cut {cut} \
         bytes; checker {with:?}"
    );
    assert!(with.clean(), "{with:?}");
    assert_eq!((with.acked, with.read), (2000, 2000), "{with:?}");
    let Some((without, cut, _)) = last_member_loses_power(false) else { return };
    println!("ELR off: the power loss cut {cut} bytes; checker {without:?}");
    assert_eq!(without.lost, 2000, "the window KIP-966 closes is real: {without:?}");
}
