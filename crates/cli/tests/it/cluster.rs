//! Three `seglog serve` processes with `process.roles=controller` on 127.0.0.1: formatted with
//! `seglog format`, they form the metadata quorum from `controller.quorum.voters` (the lowest id
//! bootstraps, the others join). The leader is killed with SIGKILL, the other two elect a new
//! one, the dead one comes back and catches up, and the three `__cluster_metadata-0` logs agree
//! byte for byte (each a prefix of the longest: the leader's idle NoOpRecords go on). `seglog cluster status` is what the test reads.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::pedantic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SEGLOG: &str = env!("CARGO_BIN_EXE_seglog");

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Voter {
    id: u32,
    port: u16,
    dir: PathBuf,
    config: PathBuf,
    child: Option<Child>,
}

impl Voter {
    fn start(&mut self) {
        let log = controller_log(&self.dir);
        let child = Command::new(SEGLOG)
            .args(["serve", "--config"])
            .arg(&self.config)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.dir.join("controller.log")).unwrap_or_default()
    }
}

impl Drop for Voter {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `seglog cluster status` of one voter, as its fields; `None` while it does not answer.
fn status(port: u16) -> Option<BTreeMap<String, String>> {
    let output = Command::new(SEGLOG)
        .args(["cluster", "status", "--controller", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    if !output.status.success() {
        return None;
    }
    Some(status_fields(&output.stdout))
}

/// A controller's stderr, appended to `controller.log` in its directory across restarts.
pub(crate) fn controller_log(dir: &Path) -> std::fs::File {
    std::fs::File::options().create(true).append(true).open(dir.join("controller.log")).unwrap()
}

/// `seglog cluster status`'s `Key: value` lines as fields.
pub(crate) fn status_fields(stdout: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// A controller's `server.properties`.
pub(crate) fn controller_properties(
    id: u32,
    quorum: &[String],
    addr: &str,
    metadata_dir: &Path,
) -> String {
    // Snapshots after 2 KiB of log (a few seconds of the leader's NoOpRecords), so that the
    // tests see them taken, kept and loaded.
    format!(
        "process.roles=controller\nnode.id={id}\ncontroller.quorum.voters={}\n\
         controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://{addr}\n\
         metadata.log.dir={}\nmetadata.log.max.record.bytes.between.snapshots=2048\n",
        quorum.join(","),
        metadata_dir.display()
    )
}

/// A new cluster id from `seglog format --random-uuid`.
pub(crate) fn random_cluster_id() -> String {
    let uuid = Command::new(SEGLOG).args(["format", "--random-uuid", "-c", "-"]).output().unwrap();
    let cluster_id = String::from_utf8(uuid.stdout).unwrap().trim().to_owned();
    assert_eq!(cluster_id.len(), 22, "{cluster_id:?}");
    cluster_id
}

/// Polls `check` until it holds, within `limit` (how long it took); on a timeout it fails with
/// `context()`, the voters' logs.
pub(crate) fn poll_until(
    what: &str,
    limit: Duration,
    context: impl Fn() -> String,
    mut check: impl FnMut() -> bool,
) -> Duration {
    let start = Instant::now();
    while !check() {
        if start.elapsed() > limit {
            panic!("{what}: not within {limit:?}\n{}", context());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    start.elapsed()
}

fn wait_for(voters: &[Voter], what: &str, limit: Duration, check: impl FnMut() -> bool) {
    let logs = || {
        voters
            .iter()
            .map(|v| format!("voter {}:\n{}", v.id, v.log_text()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    poll_until(what, limit, logs, check);
}

fn formatted_voters(root: &Path) -> Vec<Voter> {
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let quorum: Vec<String> =
        (1..=3).zip(&ports).map(|(id, port)| format!("{id}@127.0.0.1:{port}")).collect();
    let cluster_id = random_cluster_id();
    (1..=3)
        .zip(ports)
        .map(|(id, port)| {
            let dir = root.join(format!("c{id}"));
            std::fs::create_dir_all(&dir).unwrap();
            let config = dir.join("controller.properties");
            let properties = controller_properties(
                id,
                &quorum,
                &format!("127.0.0.1:{port}"),
                &dir.join("metadata"),
            );
            std::fs::write(&config, properties).unwrap();
            let format = Command::new(SEGLOG)
                .args(["format", "--cluster-id", &cluster_id, "--config"])
                .arg(&config)
                .output()
                .unwrap();
            assert!(format.status.success(), "{}", String::from_utf8_lossy(&format.stderr));
            Voter { id, port, dir, config, child: None }
        })
        .collect()
}

#[test]
fn three_controller_processes_survive_a_sigkill_of_their_leader() {
    let root = tempfile::tempdir().unwrap();
    let mut voters = formatted_voters(root.path());
    // A second format of a formatted directory is refused, as kafka-storage.sh does.
    let again = Command::new(SEGLOG)
        .args(["format", "--cluster-id", "AAAAAAAAAAAAAAAAAAAAAQ", "--config"])
        .arg(&voters[0].config)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("is already formatted"));
    for voter in &mut voters {
        voter.start();
    }
    let formed = |s: &BTreeMap<String, String>| {
        s.get("CurrentVoters").map(String::as_str) == Some("[1,2,3]")
            && s.get("MetadataVersion").map(String::as_str) == Some("14")
            && s.get("LeaderId").is_some_and(|l| l != "none")
    };
    let port1 = voters[0].port;
    wait_for(&voters, "the quorum of three", Duration::from_secs(60), || {
        status(port1).is_some_and(|s| formed(&s))
    });
    let leader: u32 = status(port1).unwrap()["LeaderId"].parse().unwrap();

    // SIGKILL the leader: the other two elect one of themselves.
    let killed_at = Instant::now();
    voters[(leader - 1) as usize].kill();
    let other = voters.iter().find(|v| v.id != leader).unwrap().port;
    let mut new_leader = String::new();
    wait_for(&voters, "a new leader", Duration::from_secs(30), || {
        new_leader = status(other).map(|s| s["LeaderId"].clone()).unwrap_or_default();
        !new_leader.is_empty() && new_leader != "none" && new_leader != leader.to_string()
    });
    println!(
        "failover after SIGKILL of leader {leader}: {:?} (new leader {new_leader})",
        killed_at.elapsed()
    );

    // Each voter takes its own snapshots once 2 KiB of log follow the last one.
    let checkpoints = |voter: &Voter| {
        let dir = voter.dir.join("metadata/__cluster_metadata-0");
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".checkpoint"))
                })
                .count()
        })
    };
    wait_for(&voters, "a snapshot on each live voter", Duration::from_secs(60), || {
        voters.iter().filter(|v| v.child.is_some()).all(|v| checkpoints(v) >= 1)
    });

    // The dead one comes back, follows the new leader and applies what the others applied.
    voters[(leader - 1) as usize].start();
    let back = voters[(leader - 1) as usize].port;
    wait_for(&voters, "the restarted voter caught up", Duration::from_secs(30), || {
        let (Some(a), Some(b)) = (status(back), status(other)) else { return false };
        a["LeaderId"] == new_leader
            && a["AppliedIndex"] == b["AppliedIndex"]
            && b["AppliedIndex"] == b["LastLogIndex"]
    });
    let mut logs = Vec::new();
    for voter in &mut voters {
        voter.kill();
        let log = voter.dir.join("metadata/__cluster_metadata-0/00000000000000000000.log");
        logs.push(std::fs::read(&log).unwrap());
    }
    assert!(!logs[0].is_empty());
    // The leader goes on writing a NoOpRecord every 500 ms while the voters are stopped one by
    // one, so a log may end a batch or two earlier: each must be a prefix of the longest.
    let longest = logs.iter().max_by_key(|log| log.len()).unwrap();
    for log in &logs {
        assert!(log.len() * 2 > longest.len(), "a log far behind the others");
        assert_eq!(&longest[..log.len()], &log[..], "the voters' __cluster_metadata-0 logs differ");
    }
    // The log is Kafka's format: `seglog dump --cluster-metadata-decoder` reads the bootstrap
    // record the first voter wrote.
    let dump = Command::new(SEGLOG)
        .args(["dump", "--cluster-metadata-decoder", "--files"])
        .arg(voters[0].dir.join("metadata/__cluster_metadata-0/00000000000000000000.log"))
        .output()
        .unwrap();
    let text = String::from_utf8(dump.stdout).unwrap();
    assert!(text.contains(r#"{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":14}}"#), "{text}");
}

/// `scripts/cluster.sh` as its usage says: up forms the quorum, kill and start take a
/// node away and back, status asks each, down stops them.
#[test]
fn the_cluster_script_runs_a_local_quorum() {
    let root = tempfile::tempdir().unwrap();
    let ports: Vec<String> = (0..3).map(|_| free_port().to_string()).collect();
    let broker_ports: Vec<String> = (0..3).map(|_| free_port().to_string()).collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster.sh");
    let dir = root.path().join("quorum");
    let run = |args: &[&str]| {
        let output = Command::new("bash")
            .arg(&script)
            .args(args)
            .arg("--dir")
            .arg(&dir)
            .args(["--ports", &ports.join(",")])
            .args(["--broker-ports", &broker_ports.join(",")])
            .env("SEGLOG_BIN", SEGLOG)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), text)
    };
    struct Down<'a>(&'a dyn Fn(&[&str]) -> (bool, String));
    impl Drop for Down<'_> {
        fn drop(&mut self) {
            (self.0)(&["down"]);
        }
    }
    let _down = Down(&run);
    let (ok, text) = run(&["up"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("CurrentVoters:    [1,2,3]") && text.contains("MetadataVersion:  14"),
        "{text}"
    );
    let port = |n: usize| ports[n - 1].parse::<u16>().unwrap();
    let leader: usize = status(port(1)).unwrap()["LeaderId"].parse().unwrap();
    let (ok, text) = run(&["kill", &leader.to_string()]);
    assert!(ok && text.contains("killed"), "{text}");
    let other = if leader == 1 { 2 } else { 1 };
    let logs =
        || std::fs::read_to_string(dir.join(format!("node-{other}/node.log"))).unwrap_or_default();
    poll_until("a new leader", Duration::from_secs(30), logs, || {
        status(port(other))
            .is_some_and(|s| s["LeaderId"] != "none" && s["LeaderId"] != leader.to_string())
    });
    let (ok, text) = run(&["start", &leader.to_string()]);
    assert!(ok && text.contains("started"), "{text}");
    poll_until("the restarted controller follows", Duration::from_secs(30), logs, || {
        status(port(leader))
            .zip(status(port(other)))
            .is_some_and(|(a, b)| a["LeaderId"] == b["LeaderId"])
    });
    let (ok, text) = run(&["status"]);
    assert!(ok && text.matches("CurrentVoters:    [1,2,3]").count() == 3, "{text}");
    let (ok, text) = run(&["down"]);
    assert!(ok && text.matches("stopping").count() == 3, "{text}");
}

/// Kafka's Uuid.randomUuid never gives an id that starts with `-` (it would read as an
/// option), nor does `seglog format --random-uuid`; an id that does is still accepted after
/// `--cluster-id`.
#[test]
fn random_cluster_ids_never_start_with_a_hyphen() {
    for _ in 0..200 {
        assert!(!random_cluster_id().starts_with('-'));
    }
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("c.properties");
    let properties = controller_properties(
        1,
        &["1@127.0.0.1:1".to_owned()],
        "127.0.0.1:1",
        &root.path().join("m"),
    );
    std::fs::write(&config, properties).unwrap();
    let output = Command::new(SEGLOG)
        .args(["format", "--cluster-id", "-AAAAAAAAAAAAAAAAAAAAQ", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let meta = std::fs::read_to_string(root.path().join("m/meta.properties")).unwrap();
    assert!(meta.contains("cluster.id=-AAAAAAAAAAAAAAAAAAAAQ"), "{meta}");
}
