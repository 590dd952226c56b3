//! A three-node cluster from `scripts/cluster.sh` (each node a broker and a voter) serving real
//! clients: kcat lists three brokers; librdkafka (the `rdkafka` crate) creates a topic through
//! any broker, finds its leaders spread over all three, produces through one broker and
//! consumes in a group through another; a SIGKILLed leader's partitions come back under a
//! higher leader epoch once it restarts, and the producer and consumer go on with nothing
//! lost or duplicated.

#![allow(clippy::unwrap_used, reason = "a test: a failed call is the failure")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rdkafka::admin::{
    AdminClient, AdminOptions, AlterConfig, NewTopic, ResourceSpecifier, TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Message, TopicPartitionList};

use crate::cluster::{free_port, poll_until};
use crate::serve::{client, which};

const SEGLOG: &str = env!("CARGO_BIN_EXE_seglog");
const TOPIC: &str = "orders";
const PARTITIONS: i32 = 6;

/// The cluster of `scripts/cluster.sh` on free ports, stopped on drop.
pub(crate) struct Cluster {
    pub(crate) dir: std::path::PathBuf,
    ports: Vec<String>,
    broker_ports: Vec<String>,
    /// More environment for the nodes (`SEGLOG_FSYNC_TRACE`).
    env: Vec<(String, String)>,
}

impl Cluster {
    /// `scripts/cluster.sh up` on free ports under `root`: the cluster and what `up` printed.
    fn up(root: &Path) -> (Self, String) {
        Self::up_with(root, &[])
    }

    /// `up` with more of its options (`--secure`).
    pub(crate) fn up_with(root: &Path, options: &[&str]) -> (Self, String) {
        Self::up_with_env(root, options, Vec::new())
    }

    /// `up_with`, the nodes started (now and by `start`) with `env` too.
    pub(crate) fn up_with_env(
        root: &Path,
        options: &[&str],
        env: Vec<(String, String)>,
    ) -> (Self, String) {
        let cluster = Self {
            dir: root.join("cluster"),
            ports: (0..3).map(|_| free_port().to_string()).collect(),
            broker_ports: (0..3).map(|_| free_port().to_string()).collect(),
            env,
        };
        let (ok, text) = cluster.run(&[&["up"], options].concat());
        assert!(ok, "{text}\n{}", cluster.logs());
        (cluster, text)
    }

    pub(crate) fn run(&self, args: &[&str]) -> (bool, String) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster.sh");
        let output = Command::new("bash")
            .arg(&script)
            .args(args)
            .arg("--dir")
            .arg(&self.dir)
            .args(["--ports", &self.ports.join(",")])
            .args(["--broker-ports", &self.broker_ports.join(",")])
            .env("SEGLOG_BIN", SEGLOG)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), text)
    }

    /// The command line of `scripts/cluster.sh VERB NODE` for this cluster (for a client
    /// script that runs it itself; NODE may be a placeholder the script fills in).
    pub(crate) fn command(&self, verb: &str, node: &str) -> Vec<String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster.sh");
        [
            "bash".to_owned(),
            script.display().to_string(),
            verb.to_owned(),
            node.to_owned(),
            "--dir".to_owned(),
            self.dir.display().to_string(),
            "--ports".to_owned(),
            self.ports.join(","),
            "--broker-ports".to_owned(),
            self.broker_ports.join(","),
        ]
        .to_vec()
    }

    pub(crate) fn bootstrap(&self, node: usize) -> String {
        format!("127.0.0.1:{}", self.broker_ports[node - 1])
    }

    pub(crate) fn logs(&self) -> String {
        (1..=3)
            .map(|n| {
                let log = self.dir.join(format!("node-{n}/node.log"));
                let text = std::fs::read_to_string(log).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                format!("== node {n}\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.run(&["down"]);
    }
}

/// Creates `topics` through the broker at `bootstrap`, each successfully.
pub(crate) fn create_topics(
    runtime: &tokio::runtime::Runtime,
    bootstrap: &str,
    topics: &[&NewTopic<'_>],
) {
    runtime.block_on(async {
        let admin: AdminClient<DefaultClientContext> =
            ClientConfig::new().set("bootstrap.servers", bootstrap).create().unwrap();
        let results =
            admin.create_topics(topics.iter().copied(), &AdminOptions::new()).await.unwrap();
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    });
}

/// Each partition's leader as a client's Metadata shows it; -1 for none.
fn leaders(bootstrap: &str) -> BTreeMap<i32, i32> {
    leaders_of(bootstrap, TOPIC)
}

/// [`leaders`] of `topic`.
fn leaders_of(bootstrap: &str, topic: &str) -> BTreeMap<i32, i32> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("a metadata client");
    let Ok(metadata) = consumer.fetch_metadata(Some(topic), Duration::from_secs(10)) else {
        return BTreeMap::new();
    };
    metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic && t.error().is_none())
        .flat_map(|t| t.partitions().iter().map(|p| (p.id(), p.leader())))
        .collect()
}

/// The `leader-epoch-checkpoint` of `partition` on `node` (librdkafka's metadata does not
/// show leader epochs): a new leader epoch adds a line.
fn leader_epoch_file(dir: &Path, node: i32, partition: i32) -> String {
    let path = dir.join(format!("node-{node}/data/{TOPIC}-{partition}/leader-epoch-checkpoint"));
    std::fs::read_to_string(path).unwrap_or_default()
}

async fn produce(bootstrap: &str, from: usize, to: usize) {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", "60000")
        .create()
        .expect("a producer");
    let mut deliveries = Vec::new();
    for i in from..to {
        let (key, value) = (format!("k{i}"), format!("v{i}"));
        let record = FutureRecord::to(TOPIC).key(&key).payload(&value);
        let delivery = producer.send_result(record).map_err(|(error, _)| error);
        deliveries.push(delivery.unwrap_or_else(|error| panic!("record {i} not queued: {error}")));
    }
    for (i, delivery) in (from..).zip(deliveries) {
        let delivered = delivery.await.expect("the producer stays");
        delivered.unwrap_or_else(|(error, _)| panic!("record {i} not acknowledged: {error}"));
    }
}

/// Consumes in group `group` through `bootstrap` until `n` records came (or 60 s passed),
/// commits, checks that the group's committed offsets add up to `committed_total`, and returns
/// the values seen, each with how often it came.
fn consume(
    bootstrap: &str,
    group: &str,
    n: usize,
    committed_total: i64,
) -> BTreeMap<String, usize> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("a consumer");
    consumer.subscribe(&[TOPIC]).expect("subscribed");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let deadline = std::time::Instant::now() + Duration::from_mins(1);
    while seen.values().sum::<usize>() < n && std::time::Instant::now() < deadline {
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(500)) {
            let value = String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned();
            *seen.entry(value).or_default() += 1;
        }
    }
    consumer.commit_consumer_state(CommitMode::Sync).expect("offsets committed");
    let mut assignment = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        assignment.add_partition(TOPIC, p);
    }
    let committed = consumer.committed_offsets(assignment, Duration::from_secs(10)).unwrap();
    let total: i64 = committed
        .elements()
        .iter()
        .filter_map(|e| e.offset().to_raw())
        .filter(|offset| *offset >= 0)
        .sum();
    assert_eq!(total, committed_total, "the committed offsets after {seen:?}");
    seen
}

/// Group requests for `group` answer on its coordinator only: FindCoordinator through any
/// broker names one broker; DescribeGroups and OffsetFetch there answer, and on the other two
/// NOT_COORDINATOR (16), as Kafka's `isCoordinatorForGroup` (no read from, or group made in,
/// another broker's memory).
fn group_requests_go_to_the_coordinator(cluster: &Cluster, group: &str) {
    use kafka_protocol::messages::{
        DescribeGroupsRequest, FindCoordinatorRequest, GroupId, OffsetFetchRequest,
    };
    use kafka_protocol::protocol::StrBytes;
    use seglog_broker::wire::Client;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let group_id = GroupId(StrBytes::from_string(group.to_owned()));
        let mut coordinators = BTreeSet::new();
        let mut codes = BTreeMap::new();
        for n in 1..=3 {
            let mut client = Client::connect(cluster.bootstrap(n)).await.unwrap();
            let find = FindCoordinatorRequest::default().with_key(group_id.0.clone());
            let found = client.send(&find, 3).await.unwrap();
            assert_eq!(found.error_code, 0, "FindCoordinator through broker {n}");
            coordinators.insert(found.node_id.0);
            let describe = DescribeGroupsRequest::default().with_groups(vec![group_id.clone()]);
            let described = client.send(&describe, 5).await.unwrap().groups[0].error_code;
            let fetch = OffsetFetchRequest::default().with_group_id(group_id.clone());
            let fetched = client.send(&fetch, 7).await.unwrap().error_code;
            codes.insert(n, (described, fetched));
        }
        assert_eq!(coordinators.len(), 1, "one coordinator: {coordinators:?}");
        let coordinator = usize::try_from(*coordinators.first().unwrap()).unwrap();
        for (n, answer) in codes {
            let want = if n == coordinator { (0, 0) } else { (16, 16) };
            assert_eq!(answer, want, "broker {n} (the coordinator is {coordinator})");
        }
    });
}

#[test]
fn a_three_node_cluster_serves_real_clients_through_any_broker() {
    let root = tempfile::tempdir().unwrap();
    let (cluster, text) = Cluster::up(root.path());
    assert_eq!(text.matches("Broker:").count(), 3, "{text}");
    if let Some(kcat) = client("kcat", which("kcat")) {
        let output = Command::new(kcat).args(["-b", &cluster.bootstrap(2), "-L"]).output().unwrap();
        let listing = String::from_utf8_lossy(&output.stdout);
        assert!(listing.contains(" 3 brokers:"), "{listing}");
        for n in 1..=3 {
            assert!(
                listing.contains(&format!("broker {n} at {}", cluster.bootstrap(n))),
                "{listing}"
            );
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let topic = NewTopic::new(TOPIC, PARTITIONS, TopicReplication::Fixed(1));
    create_topics(&runtime, &cluster.bootstrap(3), &[&topic]);
    // Configs through one broker reach the topic's replicas on all of them, and every broker
    // describes them; a manual assignment places each partition where it says.
    runtime.block_on(async {
        let admin: AdminClient<DefaultClientContext> =
            ClientConfig::new().set("bootstrap.servers", cluster.bootstrap(1)).create().unwrap();
        let alter =
            AlterConfig::new(ResourceSpecifier::Topic(TOPIC)).set("retention.ms", "4321000");
        let results = admin.alter_configs([&alter], &AdminOptions::new()).await.unwrap();
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        let assigned = NewTopic::new("placed", 3, TopicReplication::Variable(&[&[2], &[3], &[1]]));
        let results = admin.create_topics([&assigned], &AdminOptions::new()).await.unwrap();
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        for n in 1..=3 {
            let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
                .set("bootstrap.servers", cluster.bootstrap(n))
                .create()
                .unwrap();
            let described = admin
                .describe_configs([&ResourceSpecifier::Topic(TOPIC)], &AdminOptions::new())
                .await
                .unwrap();
            let resource = described[0].as_ref().unwrap();
            let entry = resource.get("retention.ms").unwrap();
            assert_eq!(entry.value.as_deref(), Some("4321000"), "broker {n}: {entry:?}");
        }
    });
    for n in 1..=3 {
        let file = cluster.dir.join(format!("node-{n}/data/seglog-topic-configs"));
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(text.contains("4321000"), "node {n}'s replicas have the config: {text}");
    }
    let consumer: BaseConsumer =
        ClientConfig::new().set("bootstrap.servers", cluster.bootstrap(2)).create().unwrap();
    let metadata = consumer.fetch_metadata(Some("placed"), Duration::from_secs(10)).unwrap();
    let placed: Vec<i32> = metadata.topics()[0]
        .partitions()
        .iter()
        .map(rdkafka::metadata::MetadataPartition::leader)
        .collect();
    assert_eq!(placed, [2, 3, 1], "the manual assignment");
    let spread = leaders(&cluster.bootstrap(1));
    let brokers: BTreeSet<i32> = spread.values().copied().collect();
    assert_eq!(spread.len(), 6, "{spread:?}");
    assert_eq!(brokers, BTreeSet::from([1, 2, 3]), "leaders spread over the brokers: {spread:?}");
    runtime.block_on(produce(&cluster.bootstrap(1), 0, 300));
    let seen = consume(&cluster.bootstrap(3), "billing", 300, 300);
    group_requests_go_to_the_coordinator(&cluster, "billing");
    assert_eq!(seen.len(), 300, "every record once");
    assert!(seen.values().all(|n| *n == 1), "no duplicates");

    // A leader dies and comes back: its partitions return under a higher leader epoch.
    let victim = spread[&0];
    let epochs_before = leader_epoch_file(&cluster.dir, victim, 0);
    let (ok, text) = cluster.run(&["kill", &victim.to_string()]);
    assert!(ok && text.contains("killed"), "{text}");
    let (ok, text) = cluster.run(&["start", &victim.to_string()]);
    assert!(ok && text.contains("started"), "{text}");
    let other = if victim == 1 { 2 } else { 1 };
    runtime.block_on(produce(&cluster.bootstrap(other), 300, 600));
    poll_until(
        "the restarted leader's partition 0 under a new epoch",
        Duration::from_mins(1),
        || cluster.logs(),
        || {
            let now = leader_epoch_file(&cluster.dir, victim, 0);
            now.lines().count() > epochs_before.lines().count()
        },
    );
    let seen = consume(&cluster.bootstrap(other), "billing", 300, 600);
    let expected: BTreeSet<String> = (300..600).map(|i| format!("v{i}")).collect();
    assert_eq!(seen.keys().cloned().collect::<BTreeSet<_>>(), expected, "the rest, once each");
    assert!(seen.values().all(|n| *n == 1), "no duplicates");
}

/// kafka-python and confluent-kafka producers (idempotent, acks=all) go on through a controlled
/// shutdown and restart of a leader's node: no delivery error reaches the application, and
/// consumers of both clients in groups through another broker read every record exactly once;
/// DescribeQuorum through a broker names the three voters and the leader.
/// With replication factor 1 the node's partitions have no leader while it is away; the clients
/// retry until it leads them again under a new leader epoch.
#[test]
fn python_clients_follow_a_leader_change() {
    let Some(python) = crate::serve::python() else { return };
    let root = tempfile::tempdir().unwrap();
    let (cluster, _) = Cluster::up(root.path());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let topic = NewTopic::new(TOPIC, PARTITIONS, TopicReplication::Fixed(1));
    create_topics(&runtime, &cluster.bootstrap(1), &[&topic]);
    let victim = leaders(&cluster.bootstrap(1))[&0];
    let others: Vec<usize> = (1..=3).filter(|n| *n != victim as usize).collect();
    let epochs_before = leader_epoch_file(&cluster.dir, victim, 0);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster.sh");
    let command = |verb: &str| -> Vec<String> {
        [
            "bash".to_owned(),
            script.display().to_string(),
            verb.to_owned(),
            victim.to_string(),
            "--dir".to_owned(),
            cluster.dir.display().to_string(),
            "--ports".to_owned(),
            cluster.ports.join(","),
            "--broker-ports".to_owned(),
            cluster.broker_ports.join(","),
        ]
        .to_vec()
    };
    let output = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/leader_change.py"))
        .args([cluster.bootstrap(others[0]), cluster.bootstrap(others[1]), TOPIC.to_owned()])
        .args(command("stop"))
        .arg("--")
        .args(command("start"))
        .env("SEGLOG_BIN", SEGLOG)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}\n{}", cluster.logs());
    eprintln!("leader change: {stdout}");
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["errors"], serde_json::json!([]), "{stdout}");
    for client in ["confluent", "kafka_python"] {
        assert_eq!(summary[client]["lost"], 0, "{client}: {stdout}");
        assert_eq!(summary[client]["duplicated"], 0, "{client}: {stdout}");
        assert_eq!(summary[client]["other_client"]["lost"], 0, "{client}: {stdout}");
        assert_eq!(summary["consumed_by"][client], 1200, "{client}: {stdout}");
    }
    // DescribeQuorum through a broker, as kafka-python's admin client asks it.
    let quorum = &summary["quorum"];
    let voters = quorum["voters"].as_object().unwrap();
    assert_eq!(voters.keys().collect::<Vec<_>>(), ["1", "2", "3"], "{stdout}");
    assert!(voters.contains_key(&quorum["leader_id"].to_string()), "{stdout}");
    let high_watermark = quorum["high_watermark"].as_i64().unwrap();
    assert!(high_watermark > 0, "{stdout}");
    assert!(voters.values().all(|end| end.as_i64().unwrap() >= 0), "{stdout}");
    let epochs_after = leader_epoch_file(&cluster.dir, victim, 0);
    assert!(
        epochs_after.lines().count() > epochs_before.lines().count(),
        "partition 0 led again under a new epoch: {epochs_before:?} then {epochs_after:?}"
    );
}

/// A topic deleted and created again while one of its brokers was away: back, that broker
/// still holds the old incarnation's log. Replaying the metadata it missed, it deletes that log
/// (or, had a snapshot hidden the deletion, replaces it when the new topic id arrives), so a
/// consumer of the new topic reads the new records only. A topic the cluster never had, found
/// in its directory, is moved aside as stray.
#[test]
fn a_broker_back_from_away_serves_only_what_the_metadata_has() {
    let root = tempfile::tempdir().unwrap();
    let (cluster, _) = Cluster::up(root.path());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let admin = |node: usize| -> AdminClient<DefaultClientContext> {
        ClientConfig::new().set("bootstrap.servers", cluster.bootstrap(node)).create().unwrap()
    };
    let on_node_3 = NewTopic::new(TOPIC, 1, TopicReplication::Variable(&[&[3]]));
    create_topics(&runtime, &cluster.bootstrap(1), &[&on_node_3]);
    runtime.block_on(produce(&cluster.bootstrap(1), 0, 100));
    let (ok, text) = cluster.run(&["stop", "3"]);
    assert!(ok && text.contains("stopped"), "{text}");
    runtime.block_on(async {
        let results = admin(1).delete_topics(&[TOPIC], &AdminOptions::new()).await.unwrap();
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    });
    // While it is away, node 3 gets a topic the cluster never had (as a single node's data
    // would have): back, it moves it aside as stray, kept on disk but never served.
    let data = cluster.dir.join("node-3/data");
    let created = Command::new(SEGLOG)
        .args(["topics", "create", "--topic", "unknown", "--partitions", "2", "--log-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let (ok, text) = cluster.run(&["start", "3"]);
    assert!(ok && text.contains("started"), "{text}");
    poll_until(
        "the unknown topic moved aside",
        Duration::from_mins(1),
        || cluster.logs(),
        || {
            let names: Vec<String> = std::fs::read_dir(&data)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.iter().filter(|n| n.starts_with("unknown-") && n.ends_with("-stray")).count() == 2
                && !names.iter().any(|n| n == "unknown-0" || n == "unknown-1")
        },
    );
    // Node 3 is back (registered and unfenced) when a placement on it is accepted.
    poll_until(
        "node 3 back",
        Duration::from_mins(1),
        || cluster.logs(),
        || {
            runtime.block_on(async {
                let results = admin(2).create_topics([&on_node_3], &AdminOptions::new()).await;
                results.is_ok_and(|r| r.iter().all(Result::is_ok))
            })
        },
    );
    runtime.block_on(produce(&cluster.bootstrap(2), 1000, 1010));
    let seen = consume(&cluster.bootstrap(1), "again", 10, 10);
    let expected: BTreeSet<String> = (1000..1010).map(|i| format!("v{i}")).collect();
    assert_eq!(seen.keys().cloned().collect::<BTreeSet<_>>(), expected, "the new records only");
}

/// A broker-only node (`process.roles=broker`: a learner of the quorum, no vote) joins a
/// running cluster: formatted with the cluster's id, it registers, clients see four brokers,
/// and it leads and serves the partitions assigned to it. Stopped (SIGTERM: a controlled
/// shutdown), it leaves the brokers clients see, and the controller keeps it fenced.
#[test]
fn a_broker_only_node_joins_serves_and_leaves() {
    let root = tempfile::tempdir().unwrap();
    let (cluster, _) = Cluster::up(root.path());
    let node4 = root.path().join("node-4");
    let port4 = free_port();
    let mut node = start_broker_only_node(&cluster, &node4, port4);
    let logs = || {
        format!(
            "{}\n== node 4\n{}",
            cluster.logs(),
            std::fs::read_to_string(node4.join("node.log")).unwrap_or_default()
        )
    };
    let brokers = |bootstrap: &str| -> Vec<i32> {
        let consumer: BaseConsumer =
            ClientConfig::new().set("bootstrap.servers", bootstrap).create().unwrap();
        consumer
            .fetch_metadata(None, Duration::from_secs(10))
            .map(|m| m.brokers().iter().map(rdkafka::metadata::MetadataBroker::id).collect())
            .unwrap_or_default()
    };
    poll_until("four brokers", Duration::from_mins(1), logs, || {
        brokers(&cluster.bootstrap(1)).len() == 4
    });
    let bootstrap4 = format!("127.0.0.1:{port4}");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let topic = NewTopic::new(TOPIC, 2, TopicReplication::Variable(&[&[4], &[4]]));
    create_topics(&runtime, &cluster.bootstrap(2), &[&topic]);
    assert_eq!(leaders(&bootstrap4).into_values().collect::<Vec<_>>(), [4, 4]);
    runtime.block_on(produce(&cluster.bootstrap(1), 0, 100));
    let seen = consume(&bootstrap4, "joined", 100, 100);
    assert_eq!(seen.len(), 100, "every record once, served by the new broker");
    assert!(
        node4.join(format!("data/{TOPIC}-0")).is_dir()
            && node4.join(format!("data/{TOPIC}-1")).is_dir()
    );

    // (stdout, stderr, success) of a `seglog` command.
    let seglog = |args: &[&str]| {
        let output = Command::new(SEGLOG).args(args).output().unwrap();
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        (text(&output.stdout), text(&output.stderr), output.status.success())
    };
    let controller = format!("127.0.0.1:{}", cluster.ports[0]);
    let mut child = node.0.take().unwrap();
    let stopped = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(stopped.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "node 4 stopped cleanly: {status}\n{}", logs());
    poll_until("three brokers again", Duration::from_mins(1), logs, || {
        brokers(&cluster.bootstrap(2)).len() == 3
    });
    let status = seglog(&["cluster", "status", "--controller", &controller]).0;
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Broker:") && l.contains("4 epoch") && l.ends_with("fenced")),
        "{status}"
    );
    // Gone for good: unregistered through a broker, as `kafka-cluster.sh unregister`.
    let unregister =
        ["cluster", "unregister", "--bootstrap-server", &cluster.bootstrap(2), "--id", "4"];
    let (_, stderr, ok) = seglog(&unregister);
    assert!(ok, "{stderr}");
    let status = seglog(&["cluster", "status", "--controller", &controller]).0;
    assert!(
        !status.lines().any(|l| l.starts_with("Broker:") && l.contains(" 4 epoch")),
        "{status}"
    );
    assert!(status.contains("CurrentObservers: []"), "its learner is gone too: {status}");
    // Once more: it is not registered.
    let (_, stderr, ok) = seglog(&unregister);
    assert!(!ok && stderr.contains("BrokerIdNotRegistered"), "{stderr}");
}

/// A process killed (SIGKILL) if a test fails before it stops it.
struct KilledOnDrop(Option<std::process::Child>);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Formats and starts node 4 of `cluster` in `node4` as a broker alone (`process.roles=broker`),
/// its Kafka listener on `port4`.
fn start_broker_only_node(cluster: &Cluster, node4: &Path, port4: u16) -> KilledOnDrop {
    let meta =
        std::fs::read_to_string(cluster.dir.join("node-1/metadata/meta.properties")).unwrap();
    let cluster_id = meta.lines().find_map(|l| l.strip_prefix("cluster.id=")).unwrap().to_owned();
    std::fs::create_dir_all(node4).unwrap();
    // It finds the quorum through Kafka's bootstrap key, without the voters' ids.
    let bootstrap: Vec<String> =
        (1..=3).map(|n| format!("127.0.0.1:{}", cluster.ports[n - 1])).collect();
    let config = node4.join("node.properties");
    std::fs::write(
        &config,
        format!(
            "process.roles=broker\nnode.id=4\ncontroller.quorum.bootstrap.servers={}\n\
             controller.listener.names=CONTROLLER\nlisteners=PLAINTEXT://127.0.0.1:{port4}\n\
             log.dirs={}\nmetadata.log.dir={}\nseglog.metrics.listener=\nseglog.console.listener=\n",
            bootstrap.join(","),
            node4.join("data").display(),
            node4.join("metadata").display()
        ),
    )
    .unwrap();
    let formatted = Command::new(SEGLOG)
        .args(["format", "--cluster-id", &cluster_id, "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(formatted.status.success(), "{}", String::from_utf8_lossy(&formatted.stderr));
    let log = std::fs::File::create(node4.join("node.log")).unwrap();
    KilledOnDrop(Some(
        Command::new(SEGLOG).args(["serve", "--config"]).arg(&config).stderr(log).spawn().unwrap(),
    ))
}

/// Transactions across a secured cluster (`cluster.sh up --secure`: the quorum over mutual
/// TLS, the brokers over SASL_SSL on INTERNAL, ACLs on): each transactional id's coordinator is
/// the leader of its partition of `__transaction_state`, and a transaction's partitions are led
/// by all three brokers, so its markers go out as WriteTxnMarkers over SASL_SSL. kafka-python
/// and confluent-kafka commit, abort and fence (`transactions.py`, checked as on a single
/// node), and read_committed readers see exactly the committed records, which needs every
/// marker delivered. A plain `cluster status` is told that the quorum speaks TLS.
#[test]
fn a_secured_cluster_spans_transactions_and_security_metadata() {
    let Some(python) = crate::serve::python() else { return };
    let root = tempfile::tempdir().unwrap();
    let (cluster, _) = Cluster::up_with(root.path(), &["--secure"]);
    let plain = Command::new(SEGLOG)
        .args(["cluster", "status", "--controller", &format!("127.0.0.1:{}", cluster.ports[0])])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&plain.stderr);
    assert!(!plain.status.success() && said.contains("the other side speaks TLS"), "{said}");
    crate::txn::check_python_transactions(&python, &cluster.bootstrap(1), "ctxn");
    let leaders: BTreeSet<i32> = leaders_of(&cluster.bootstrap(2), "ctxn").into_values().collect();
    assert_eq!(leaders, BTreeSet::from([1, 2, 3]), "the topic's partitions are spread");
    let coordinators = (1..=3)
        .filter(|n| {
            std::fs::read_dir(cluster.dir.join(format!("node-{n}/data")))
                .unwrap()
                .filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().starts_with("__transaction_state-"))
        })
        .count();
    assert_eq!(coordinators, 3, "__transaction_state is spread over the brokers");
    security_metadata_spans_the_cluster(&cluster);
}

/// Sends `request` to the broker at `bootstrap` as `User:ANONYMOUS` (its PLAINTEXT listener).
fn ask<R: kafka_protocol::protocol::Request>(
    bootstrap: &str,
    request: &R,
    version: i16,
) -> R::Response {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut client = seglog_broker::wire::Client::connect(bootstrap).await.unwrap();
        client.send(request, version).await.unwrap()
    })
}

/// ACLs, SCRAM credentials and client quotas are the cluster's metadata (Kafka's
/// `AccessControlEntryRecord`, `UserScramCredentialRecord`, `ClientQuotaRecord`): a change
/// made through one broker is described and enforced by the others.
fn security_metadata_spans_the_cluster(cluster: &Cluster) {
    use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    use kafka_protocol::messages::create_acls_request::AclCreation;
    use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
    use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
    use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
    use kafka_protocol::messages::{
        AlterClientQuotasRequest, AlterUserScramCredentialsRequest, CreateAclsRequest,
        DeleteAclsRequest, DescribeClientQuotasRequest, DescribeUserScramCredentialsRequest,
        MetadataRequest, TopicName, metadata_request::MetadataRequestTopic,
    };
    use kafka_protocol::protocol::StrBytes;
    let text = |s: &str| StrBytes::from_string(s.to_owned());
    let metadata_error = |node: usize| {
        let topic = MetadataRequestTopic::default().with_name(Some(TopicName(text("ctxn"))));
        let request = MetadataRequest::default().with_topics(Some(vec![topic]));
        ask(&cluster.bootstrap(node), &request, 12).topics[0].error_code
    };
    assert_eq!(metadata_error(2), 0, "no ACL yet: everyone may describe");
    // DENY Describe on the topic for User:ANONYMOUS, made through broker 1 (resource type
    // 2 topic, pattern 3 literal, operation 8 describe, permission 2 deny).
    let deny = AclCreation::default()
        .with_resource_type(2)
        .with_resource_name(text("ctxn"))
        .with_resource_pattern_type(3)
        .with_principal(text("User:ANONYMOUS"))
        .with_host(text("*"))
        .with_operation(8)
        .with_permission_type(2);
    let created =
        ask(&cluster.bootstrap(1), &CreateAclsRequest::default().with_creations(vec![deny]), 3);
    assert_eq!(created.results[0].error_code, 0, "{created:?}");
    // Broker 1 answered once it applied the ACL; the others apply the same metadata record
    // moments later (as Kafka's brokers do).
    for node in [2, 3] {
        poll_until(
            &format!("broker {node} enforces the ACL made through 1"),
            Duration::from_secs(30),
            || format!("metadata error {}", metadata_error(node)),
            || metadata_error(node) == 29,
        );
    }
    let user = ScramCredentialUpsertion::default()
        .with_name(text("carol"))
        .with_mechanism(2)
        .with_iterations(8192)
        .with_salt(bytes::Bytes::from_static(b"carol-salt"))
        .with_salted_password(bytes::Bytes::from(vec![7u8; 64]));
    let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![user]);
    let altered = ask(&cluster.bootstrap(2), &request, 0);
    assert_eq!(altered.results[0].error_code, 0, "{altered:?}");
    let request = DescribeUserScramCredentialsRequest::default()
        .with_users(Some(vec![UserName::default().with_name(text("carol"))]));
    let described = ask(&cluster.bootstrap(3), &request, 0);
    let infos = &described.results[0].credential_infos;
    assert_eq!(
        (infos.len(), infos[0].mechanism, infos[0].iterations),
        (1, 2, 8192),
        "{described:?}"
    );
    let quota = EntryData::default()
        .with_entity(vec![
            EntityData::default()
                .with_entity_type(text("user"))
                .with_entity_name(Some(text("carol"))),
        ])
        .with_ops(vec![OpData::default().with_key(text("producer_byte_rate")).with_value(1024.0)]);
    let altered = ask(
        &cluster.bootstrap(3),
        &AlterClientQuotasRequest::default().with_entries(vec![quota]),
        1,
    );
    assert_eq!(altered.entries[0].error_code, 0, "{altered:?}");
    let request = DescribeClientQuotasRequest::default().with_components(vec![
        ComponentData::default()
            .with_entity_type(text("user"))
            .with_match_type(0)
            .with_match(Some(text("carol"))),
    ]);
    let described = ask(&cluster.bootstrap(1), &request, 1);
    let entries = described.entries.unwrap_or_default();
    assert_eq!(entries.len(), 1, "broker 1 has the quota set through 3");
    assert_eq!(entries[0].values[0].value.to_bits(), 1024f64.to_bits());
    let filter = DeleteAclsFilter::default()
        .with_resource_type_filter(2)
        .with_resource_name_filter(Some(text("ctxn")))
        .with_pattern_type_filter(3)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(8)
        .with_permission_type(2);
    let deleted =
        ask(&cluster.bootstrap(3), &DeleteAclsRequest::default().with_filters(vec![filter]), 3);
    assert_eq!(deleted.filter_results[0].matching_acls.len(), 1, "{deleted:?}");
    for node in [1, 2] {
        poll_until(
            &format!("broker {node} no longer denies after the delete"),
            Duration::from_secs(30),
            || format!("metadata error {}", metadata_error(node)),
            || metadata_error(node) == 0,
        );
    }
    broker_configs_span_the_cluster(cluster);
}

/// Dynamic broker configs are metadata too (`ConfigRecord`s of BROKER resources): the cluster
/// default set through broker 1 holds on broker 2 (DYNAMIC_DEFAULT_BROKER_CONFIG, 3), and
/// broker 3's own layer can be set through broker 1 (DYNAMIC_BROKER_CONFIG, 2).
fn broker_configs_span_the_cluster(cluster: &Cluster) {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{DescribeConfigsRequest, IncrementalAlterConfigsRequest};
    use kafka_protocol::protocol::StrBytes;
    let text = |s: &str| StrBytes::from_string(s.to_owned());
    let set = |via: usize, resource: &str, value: &str| {
        let config = AlterableConfig::default()
            .with_name(text("log.retention.ms"))
            .with_config_operation(0)
            .with_value(Some(text(value)));
        let resource = AlterConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(text(resource))
            .with_configs(vec![config]);
        let request = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
        let answer = ask(&cluster.bootstrap(via), &request, 1);
        assert_eq!(answer.responses[0].error_code, 0, "{answer:?}");
    };
    let retention = |node: usize| {
        let resource = DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(text(&node.to_string()))
            .with_configuration_keys(Some(vec![text("log.retention.ms")]));
        let request = DescribeConfigsRequest::default().with_resources(vec![resource]);
        let answer = ask(&cluster.bootstrap(node), &request, 4);
        let entry = &answer.results[0].configs[0];
        (entry.value.as_ref().map(ToString::to_string), entry.config_source)
    };
    // A change is applied by the broker it went through before the answer, and by the others
    // moments later, when their appliers reach its record (as Kafka's brokers).
    let shows = |node: usize, value: &str, source: i8, what: &str| {
        let wanted = (Some(value.to_owned()), source);
        poll_until(
            what,
            Duration::from_secs(10),
            || format!("{:?}", retention(node)),
            || retention(node) == wanted,
        );
    };
    set(1, "", "1234567");
    shows(2, "1234567", 3, "the cluster default on broker 2");
    set(1, "3", "7654321");
    shows(3, "7654321", 2, "broker 3's own, set through 1");
    assert_eq!(retention(1), (Some("1234567".to_owned()), 3), "broker 1 keeps the default");
}

/// The exactly-once checker of `txn.rs` (`eos.py`: a read_committed consumer in a group,
/// a transactional producer and send_offsets_to_transaction) against the cluster while a
/// seeded node (broker and voter) is SIGKILLed and restarted: the transaction coordinators,
/// group coordinators and partition leaders on it go away and come back under new epochs.
/// Nothing is lost, duplicated or torn.
#[test]
fn exactly_once_survives_killed_nodes() {
    let Some(python) = crate::serve::python() else { return };
    let root = tempfile::tempdir().unwrap();
    let (cluster, _) = Cluster::up(root.path());
    let bootstrap = (1..=3).map(|n| cluster.bootstrap(n)).collect::<Vec<_>>().join(",");
    let run = crate::txn::EosRun {
        python: &python,
        bootstrap: &bootstrap,
        dir: root.path(),
        n_records: 1_000,
        min_kills: 3,
        replication_factor: 1,
        filled: false,
    };
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run.check(&mut |rng| {
            let node = rng.between(1, 3).to_string();
            let (killed, text) = cluster.run(&["kill", &node]);
            assert!(killed, "{text}");
            let (started, text) = cluster.run(&["start", &node]);
            assert!(started, "{text}\n{}", cluster.logs());
        });
    }));
    if let Err(panic) = checked {
        eprintln!("the nodes' logs:\n{}", cluster.logs());
        std::panic::resume_unwind(panic);
    }
}
