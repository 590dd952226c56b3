//! The metadata quorum under network faults: three `seglog serve` nodes (each a broker and a
//! controller: Kafka's combined mode), each in a network
//! namespace this test makes (veth pairs on a bridge in a fourth namespace, addresses
//! 10.<n>.0.1-3), with faults made by nftables rules inside a node's namespace (this kernel has no
//! netem) and by signals:
//!
//! - the leader partitioned away both ways;
//! - one voter partitioned one way (it hears the others, they never hear it);
//! - the leader stopped with SIGSTOP past the election timeout, then continued.
//!
//! The leader writes a `NoOpRecord` every 500 ms, so the majority's applied index must keep
//! growing through each fault (writes go on with two of three) while a cut-off voter's does
//! not pass what it had. During each fault a client (confluent-kafka, run in a majority node's
//! namespace) creates a topic through that node's broker: topic creation keeps working with two
//! of three voters, and after the heal every voter has every topic. After each heal every voter reaches the leader's applied index, and
//! the three `__cluster_metadata-0` logs are prefixes of one another: no voter kept, applied or
//! lost a record the others do not have. Each scenario prints how long its failover took.
//!
//! Needs root (or `sudo -n`), `ip` and `nft` (`.ci/run` installs iproute2 and nftables): under
//! CI (`CI` set) their absence fails the test; elsewhere it skips, saying so.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr, clippy::pedantic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::cluster::{
    controller_log, controller_properties, poll_until, random_cluster_id, status_fields,
};

const SEGLOG: &str = env!("CARGO_BIN_EXE_seglog");
const PORT: u16 = 19093;
/// Each node's Kafka listener, on its namespace's address.
pub(crate) const BROKER_PORT: u16 = 9092;

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout == b"0\n")
}

/// `args` as a command, through `sudo -n` when this is not root (`ip netns` and `nft` need it).
pub(crate) fn privileged(args: &[&str]) -> Command {
    if is_root() {
        let mut command = Command::new(args[0]);
        command.args(&args[1..]);
        command
    } else {
        let mut command = Command::new("sudo");
        command.arg("-n").args(args);
        command
    }
}

pub(crate) fn run(args: &[&str]) -> Output {
    privileged(args).output().unwrap()
}

pub(crate) fn must(args: &[&str]) {
    let output = run(args);
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// Whether namespaces and nftables are usable; under CI their absence is a failure.
pub(crate) fn netns_available() -> bool {
    let allowed = is_root()
        || Command::new("sudo").args(["-n", "true"]).output().is_ok_and(|o| o.status.success());
    let tools = allowed
        && run(&["ip", "-V"]).status.success()
        && run(&["nft", "--version"]).status.success();
    if tools {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI needs root (or sudo -n), ip and nft for the netns tests"
    );
    eprintln!(
        "SKIPPED: the network namespace tests need root or sudo -n, ip (iproute2) and nft (nftables)"
    );
    false
}

/// Three node namespaces on a bridge namespace, deleted on drop.
pub(crate) struct Net {
    prefix: String,
    subnet: u32,
    clients_linked: bool,
}

impl Net {
    pub(crate) fn new() -> Self {
        // Distinct per process and per test within it (tests run in parallel).
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % 10;
        let pid = std::process::id();
        let net = Self {
            prefix: format!("sg{}{n}", pid % 10_000),
            subnet: 100 + (pid % 15) * 10 + n,
            clients_linked: false,
        };
        let bridge = net.bridge();
        must(&["ip", "netns", "add", &bridge]);
        must(&["ip", "-n", &bridge, "link", "add", "br0", "type", "bridge"]);
        must(&["ip", "-n", &bridge, "link", "set", "br0", "up"]);
        for id in 1..=3 {
            let ns = net.ns(id);
            let peer = format!("p{id}");
            must(&["ip", "netns", "add", &ns]);
            must(&[
                "ip", "-n", &ns, "link", "add", "eth0", "type", "veth", "peer", "name", &peer,
                "netns", &bridge,
            ]);
            must(&["ip", "-n", &ns, "addr", "add", &format!("{}/24", net.ip(id)), "dev", "eth0"]);
            must(&["ip", "-n", &ns, "link", "set", "eth0", "up"]);
            must(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            must(&["ip", "-n", &bridge, "link", "set", &peer, "master", "br0"]);
            must(&["ip", "-n", &bridge, "link", "set", &peer, "up"]);
        }
        net
    }

    fn bridge(&self) -> String {
        format!("{}b", self.prefix)
    }

    fn ns(&self, id: u32) -> String {
        format!("{}n{id}", self.prefix)
    }

    pub(crate) fn ip(&self, id: u32) -> String {
        format!("10.{}.0.{id}", self.subnet)
    }

    /// Drops what voter `id` receives (`input`) and/or sends (`output`) on its link.
    fn cut(&self, id: u32, input: bool, output: bool) {
        let ns = self.ns(id);
        must(&["ip", "netns", "exec", &ns, "nft", "add", "table", "inet", "fault"]);
        if input {
            must(&[
                "ip",
                "netns",
                "exec",
                &ns,
                "nft",
                "add chain inet fault in { type filter hook input priority 0; policy accept; }",
            ]);
            must(&[
                "ip", "netns", "exec", &ns, "nft", "add", "rule", "inet", "fault", "in", "iifname",
                "eth0", "drop",
            ]);
        }
        if output {
            must(&[
                "ip",
                "netns",
                "exec",
                &ns,
                "nft",
                "add chain inet fault out { type filter hook output priority 0; policy accept; }",
            ]);
            must(&[
                "ip", "netns", "exec", &ns, "nft", "add", "rule", "inet", "fault", "out",
                "oifname", "eth0", "drop",
            ]);
        }
    }

    /// Links the test's own (root) namespace to the bridge at `10.x.0.100`, so that its
    /// clients reach every node: the clients' namespace, cut off by no fault.
    pub(crate) fn link_clients(&mut self) {
        let link = self.client_link();
        must(&[
            "ip",
            "link",
            "add",
            &link,
            "type",
            "veth",
            "peer",
            "name",
            "pc",
            "netns",
            &self.bridge(),
        ]);
        must(&["ip", "addr", "add", &format!("{}/24", self.ip(100)), "dev", &link]);
        must(&["ip", "link", "set", &link, "up"]);
        must(&["ip", "-n", &self.bridge(), "link", "set", "pc", "master", "br0"]);
        must(&["ip", "-n", &self.bridge(), "link", "set", "pc", "up"]);
        self.clients_linked = true;
    }

    fn client_link(&self) -> String {
        format!("{}c", self.prefix)
    }

    /// Drops every packet between node `id` and the nodes `others`, both ways (the clients
    /// still reach it).
    pub(crate) fn cut_from(&self, id: u32, others: &[u32]) {
        let ns = self.ns(id);
        let set = others.iter().map(|o| self.ip(*o)).collect::<Vec<_>>().join(", ");
        must(&["ip", "netns", "exec", &ns, "nft", "add", "table", "inet", "fault"]);
        for (chain, hook, field) in [("in", "input", "saddr"), ("out", "output", "daddr")] {
            let add_chain = format!(
                "add chain inet fault {chain} {{ type filter hook {hook} priority 0; policy accept; }}"
            );
            must(&["ip", "netns", "exec", &ns, "nft", &add_chain]);
            let rule = format!("add rule inet fault {chain} ip {field} {{ {set} }} drop");
            must(&["ip", "netns", "exec", &ns, "nft", &rule]);
        }
    }

    /// Drops `percent` of every frame the bridge forwards, at random (nftables' `numgen`, as
    /// this kernel has no netem): each packet between two nodes, or a node and the clients,
    /// crosses the bridge once.
    pub(crate) fn lossy(&self, percent: u32) {
        let bridge = self.bridge();
        must(&["ip", "netns", "exec", &bridge, "nft", "add", "table", "bridge", "loss"]);
        must(&[
            "ip",
            "netns",
            "exec",
            &bridge,
            "nft",
            "add chain bridge loss drops { type filter hook forward priority 0; policy accept; }",
        ]);
        let rule = format!("add rule bridge loss drops numgen random mod 100 < {percent} drop");
        must(&["ip", "netns", "exec", &bridge, "nft", &rule]);
    }

    /// Ends [`lossy`](Self::lossy).
    pub(crate) fn lossless(&self) {
        must(&["ip", "netns", "exec", &self.bridge(), "nft", "delete", "table", "bridge", "loss"]);
    }

    /// Drops what node `id` receives on `port` from the nodes `others` (their replica fetches
    /// when `port` is the broker port); the quorum's port and the clients are untouched.
    pub(crate) fn block_port_from(&self, id: u32, others: &[u32], port: u16) {
        let ns = self.ns(id);
        let set = others.iter().map(|o| self.ip(*o)).collect::<Vec<_>>().join(", ");
        must(&["ip", "netns", "exec", &ns, "nft", "add", "table", "inet", "fault"]);
        let chain = "add chain inet fault in { type filter hook input priority 0; policy accept; }";
        must(&["ip", "netns", "exec", &ns, "nft", chain]);
        let rule = format!("add rule inet fault in ip saddr {{ {set} }} tcp dport {port} drop");
        must(&["ip", "netns", "exec", &ns, "nft", &rule]);
    }

    pub(crate) fn heal(&self, id: u32) {
        must(&["ip", "netns", "exec", &self.ns(id), "nft", "delete", "table", "inet", "fault"]);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        if self.clients_linked {
            let _ = run(&["ip", "link", "del", &self.client_link()]);
        }
        for ns in [self.ns(1), self.ns(2), self.ns(3), self.bridge()] {
            let _ = run(&["ip", "netns", "del", &ns]);
        }
    }
}

pub(crate) struct Voter {
    id: u32,
    ns: String,
    ip: String,
    pub(crate) dir: PathBuf,
    config: PathBuf,
    child: Option<Child>,
}

impl Voter {
    pub(crate) fn start(&mut self) {
        let log = controller_log(&self.dir);
        let child = privileged(&["ip", "netns", "exec", &self.ns, SEGLOG, "serve", "--config"])
            .arg(&self.config)
            .env("RUST_LOG", "info")
            // Where a power-loss test finds what each file's last fsync made durable.
            .env(seglog_storage::io::FSYNC_TRACE_ENV, self.dir.join("fsync-trace"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// Stops the node with SIGTERM (a clean shutdown) and waits until it is gone.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            must(&["kill", "-TERM", &child.id().to_string()]);
            let _ = child.wait();
        }
    }

    /// Kills the node with SIGKILL and waits until it is gone.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            must(&["kill", "-KILL", &child.id().to_string()]);
            let _ = child.wait();
        }
    }

    pub(crate) fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        // `ip netns exec` execs the command, so the child is seglog itself (under sudo, its
        // parent: the signal is relayed).
        must(&["kill", &format!("-{signal}"), &pid]);
    }

    /// `seglog cluster status` from inside this voter's namespace, as fields.
    fn status(&self) -> Option<BTreeMap<String, String>> {
        let output = privileged(&[
            "ip",
            "netns",
            "exec",
            &self.ns,
            SEGLOG,
            "cluster",
            "status",
            "--controller",
        ])
        .arg(format!("{}:{PORT}", self.ip))
        .output()
        .unwrap();
        output.status.success().then(|| status_fields(&output.stdout))
    }

    fn field(&self, key: &str) -> Option<String> {
        self.status().and_then(|s| s.get(key).cloned())
    }

    fn applied(&self) -> u64 {
        self.field("AppliedIndex").and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    fn log(&self) -> Vec<u8> {
        std::fs::read(self.dir.join("metadata/__cluster_metadata-0/00000000000000000000.log"))
            .unwrap_or_default()
    }
}

impl Drop for Voter {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = run(&["kill", "-KILL", &child.id().to_string()]);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn wait_for(
    voters: &[Voter],
    what: &str,
    limit: Duration,
    check: impl FnMut() -> bool,
) -> Duration {
    let logs = || {
        let tails = voters.iter().map(|v| {
            let text = std::fs::read_to_string(v.dir.join("controller.log")).unwrap_or_default();
            let panics: Vec<&str> =
                text.lines().filter(|l| l.contains("panicked at")).take(3).collect();
            let tail: Vec<&str> = text.lines().rev().take(15).chain(panics).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            format!("voter {} ({:?}):\n{}", v.id, v.status(), tail.join("\n"))
        });
        tails.collect::<Vec<_>>().join("\n")
    };
    poll_until(what, limit, logs, check)
}

fn voters(net: &Net, root: &Path) -> Vec<Voter> {
    voters_with(net, root, "")
}

/// [`voters`] with `extra` settings for every node.
pub(crate) fn voters_with(net: &Net, root: &Path, extra: &str) -> Vec<Voter> {
    let quorum: Vec<String> = (1..=3).map(|id| format!("{id}@{}:{PORT}", net.ip(id))).collect();
    let cluster_id = random_cluster_id();
    (1..=3)
        .map(|id| {
            let dir = root.join(format!("c{id}"));
            std::fs::create_dir_all(&dir).unwrap();
            let config = dir.join("controller.properties");
            let addr = format!("{}:{PORT}", net.ip(id));
            // A combined node: the controller's keys, a broker listener, its own data.
            let properties = controller_properties(id, &quorum, &addr, &dir.join("metadata"))
                .replace("process.roles=controller", "process.roles=broker,controller")
                .replace(
                    &format!("listeners=CONTROLLER://{addr}"),
                    &format!(
                        "listeners=PLAINTEXT://{}:{BROKER_PORT},CONTROLLER://{addr}",
                        net.ip(id)
                    ),
                )
                + &format!(
                    "log.dirs={}\nseglog.metrics.listener=\nseglog.console.listener=\n",
                    dir.join("data").display()
                )
                + extra;
            std::fs::write(&config, properties).unwrap();
            must(&[
                SEGLOG,
                "format",
                "--cluster-id",
                &cluster_id,
                "--config",
                config.to_str().unwrap(),
            ]);
            Voter { id, ns: net.ns(id), ip: net.ip(id), dir, config, child: None }
        })
        .collect()
}

/// The leader as voter `from` sees it.
fn leader_seen_by(voters: &[Voter], from: u32) -> Option<u32> {
    voters[(from - 1) as usize].field("LeaderId").and_then(|l| l.parse().ok())
}

/// Every voter at the leader's applied index, and their logs prefixes of one another.
fn converged(voters: &[Voter], what: &str) {
    wait_for(voters, what, Duration::from_secs(30), || {
        let applied: Vec<u64> = voters.iter().map(Voter::applied).collect();
        let leaders: Vec<Option<String>> = voters.iter().map(|v| v.field("LeaderId")).collect();
        applied.iter().all(|a| *a > 0 && a.abs_diff(applied[0]) <= 2)
            && leaders.iter().all(|l| l == &leaders[0])
    });
    let logs: Vec<Vec<u8>> = voters.iter().map(Voter::log).collect();
    let longest = logs.iter().max_by_key(|log| log.len()).unwrap();
    for (voter, log) in voters.iter().zip(&logs) {
        let common = log.len().min(longest.len());
        assert_eq!(&longest[..common], &log[..common], "{what}: voter {}'s log differs", voter.id);
    }
}

/// Creates `topic` (3 partitions) through the broker of node `via`, from inside its namespace,
/// with confluent-kafka's admin client; fails the test if it is not created within 60 s.
fn create_topic(voters: &[Voter], python: &Path, via: u32, topic: &str) -> Duration {
    let voter = &voters[(via - 1) as usize];
    let script = format!(
        "from confluent_kafka.admin import AdminClient, NewTopic\n\
         a = AdminClient({{'bootstrap.servers': '{}:{BROKER_PORT}'}})\n\
         for f in a.create_topics([NewTopic('{topic}', 3, 1)], request_timeout=60).values():\n\
         \x20   f.result(timeout=60)\n",
        voter.ip
    );
    let started = std::time::Instant::now();
    let output = privileged(&["ip", "netns", "exec", &voter.ns])
        .arg(python)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "creating {topic} through node {via}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    started.elapsed()
}

/// The majority's applied index grows by at least `n` (the leader's NoOpRecords commit).
fn majority_writes(voters: &[Voter], majority: &[u32], n: u64, what: &str) {
    let from = voters[(majority[0] - 1) as usize].applied();
    wait_for(voters, what, Duration::from_secs(30), || {
        voters[(majority[0] - 1) as usize].applied() >= from + n
    });
}

#[test]
fn the_quorum_survives_partitions_and_pauses() {
    if !netns_available() {
        return;
    }
    let Some(python) = crate::serve::python() else { return };
    let root = tempfile::tempdir().unwrap();
    let net = Net::new();
    let mut voters = voters(&net, root.path());
    for voter in &mut voters {
        voter.start();
    }
    wait_for(&voters, "the quorum of three", Duration::from_secs(60), || {
        voters[0].field("CurrentVoters").as_deref() == Some("[1,2,3]")
            && voters[0].field("MetadataVersion").as_deref() == Some("14")
    });
    converged(&voters, "formed");

    // 1. The leader partitioned away, both ways: the two others elect one of themselves and go
    // on writing; the old leader applies nothing new. Healed, it follows.
    let leader = leader_seen_by(&voters, 1).unwrap();
    let others: Vec<u32> = (1..=3).filter(|id| *id != leader).collect();
    let isolated_applied = voters[(leader - 1) as usize].applied();
    net.cut(leader, true, true);
    let took = wait_for(&voters, "a leader on the majority side", Duration::from_secs(30), || {
        leader_seen_by(&voters, others[0]).is_some_and(|l| l != leader)
            && leader_seen_by(&voters, others[1]) == leader_seen_by(&voters, others[0])
    });
    println!("partitioned leader {leader}: new leader after {took:?}");
    majority_writes(&voters, &others, 10, "writes with two of three");
    let took = create_topic(&voters, &python, others[0], "during-partition");
    println!("partitioned leader {leader}: topic created with two voters in {took:?}");
    // Nothing the isolated voter applied came after the cut but for what was in flight then.
    let isolated_now = voters[(leader - 1) as usize].applied();
    assert!(
        isolated_now <= isolated_applied + 2,
        "the isolated leader applied {isolated_applied} -> {isolated_now}"
    );
    net.heal(leader);
    converged(&voters, "after the partition healed");

    // 2. One voter partitioned one way: it hears the others, they never hear it. The quorum
    // keeps (or finds) a leader among the two others and goes on.
    let leader = leader_seen_by(&voters, 1).unwrap();
    let mute = (1..=3).find(|id| *id != leader).unwrap();
    let majority: Vec<u32> = (1..=3).filter(|id| *id != mute).collect();
    net.cut(mute, false, true);
    majority_writes(&voters, &majority, 10, "writes while a voter cannot speak");
    create_topic(&voters, &python, leader, "during-one-way");
    net.heal(mute);
    converged(&voters, "after the one-way partition healed");

    // 3. The leader stopped (SIGSTOP) past the election timeout: the others elect a new one;
    // continued (SIGCONT), the old leader steps down and follows.
    let leader = leader_seen_by(&voters, 1).unwrap();
    let others: Vec<u32> = (1..=3).filter(|id| *id != leader).collect();
    voters[(leader - 1) as usize].signal("STOP");
    let took =
        wait_for(&voters, "a leader while the old one is stopped", Duration::from_secs(30), || {
            leader_seen_by(&voters, others[0]).is_some_and(|l| l != leader)
        });
    println!("stopped leader {leader}: new leader after {took:?}");
    majority_writes(&voters, &others, 10, "writes while the leader is stopped");
    let took = create_topic(&voters, &python, others[0], "during-pause");
    println!("stopped leader {leader}: topic created with two voters in {took:?}");
    voters[(leader - 1) as usize].signal("CONT");
    converged(&voters, "after SIGCONT");
    // Converged allows a voter two entries behind: each catches up to every topic.
    wait_for(&voters, "every voter with every topic", Duration::from_secs(30), || {
        voters.iter().all(|v| v.field("Topics").as_deref() == Some("3"))
    });
    for voter in &voters {
        let text = std::fs::read_to_string(voter.dir.join("controller.log")).unwrap();
        assert!(!text.contains("panicked"), "voter {} panicked:\n{text}", voter.id);
    }
}
