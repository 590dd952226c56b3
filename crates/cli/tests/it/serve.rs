//! `seglog serve` as users run it, with real clients: kcat (librdkafka 2.0.2 in Debian's kcat
//! 1.7.1, our old-client check), kafka-python and confluent-kafka. The clients come from the
//! machine: `.ci/run` installs kcat and creates the Python venv (SEGLOG_PYTHON). Under CI a
//! missing client fails the test; elsewhere the test says loudly that it skipped.

#![allow(clippy::print_stderr, reason = "a skipped test says so on stderr")]
#![allow(clippy::format_collect, reason = "test data built line by line")]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub(crate) struct Broker {
    pub(crate) child: Child,
    pub(crate) addr: String,
    /// The web console's address, when `extra` turned it on (`--console-listener`).
    pub(crate) console: Option<String>,
    /// The broker's stderr lines after the address line (tracing's output).
    stderr: Option<mpsc::Receiver<String>>,
}

impl Broker {
    pub(crate) fn start(dir: &Path) -> Self {
        Self::start_on(dir, "127.0.0.1:0")
    }

    /// Starts `seglog serve` on `listener` (a port of 0 picks one).
    pub(crate) fn start_on(dir: &Path, listener: &str) -> Self {
        Self::start_with(dir, listener, &[])
    }

    /// Starts `seglog serve` on `listener` with more arguments (`--override k=v`, ...).
    pub(crate) fn start_with(dir: &Path, listener: &str, extra: &[&str]) -> Self {
        Self::spawn(Command::new(env!("CARGO_BIN_EXE_seglog")), dir, listener, extra)
    }

    /// Starts `seglog serve` with RLIMIT_NOFILE (soft and hard) at `nofile`, through the shell's
    /// `ulimit -n`.
    pub(crate) fn start_limited(dir: &Path, nofile: u32, extra: &[&str]) -> Self {
        let mut command = Command::new("sh");
        command.args(["-c", r#"ulimit -n "$0" && exec "$@""#]).arg(nofile.to_string());
        command.arg(env!("CARGO_BIN_EXE_seglog"));
        Self::spawn(command, dir, "127.0.0.1:0", extra)
    }

    pub(crate) fn spawn(command: Command, dir: &Path, listener: &str, extra: &[&str]) -> Self {
        Self::spawn_with_metrics(command, dir, listener, "", extra)
    }

    /// [`Broker::spawn`] with `/metrics` served on `metrics` (empty: off).
    pub(crate) fn spawn_with_metrics(
        mut command: Command,
        dir: &Path,
        listener: &str,
        metrics: &str,
        extra: &[&str],
    ) -> Self {
        let mut child = command
            .args(["serve", "--listener", listener, "--metrics-listener", metrics])
            .args(if extra.contains(&"--console-listener") {
                &[][..]
            } else {
                &["--console-listener", ""][..]
            })
            .arg("--log-dir")
            .arg(dir)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("seglog serve starts");
        let stderr = child.stderr.take().expect("stderr");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        let (addr, console) = loop {
            let line =
                receiver.recv_timeout(Duration::from_mins(1)).expect("serve announces its address");
            if let Some(rest) = line.strip_prefix("seglog: serving Kafka clients on ") {
                let addr = rest.split_whitespace().next().expect("address").to_owned();
                let console = rest
                    .split_once("console: http://")
                    .map(|(_, console)| console.trim_end_matches(')').to_owned());
                break (addr, console);
            }
        };
        Self { child, addr, console, stderr: Some(receiver) }
    }

    /// Stderr lines until one contains `wanted` (that one included); fails after `timeout`.
    pub(crate) fn stderr_until(&mut self, wanted: &str, timeout: Duration) -> Vec<String> {
        let receiver = self.stderr.as_ref().expect("stderr is read");
        let deadline = std::time::Instant::now() + timeout;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match receiver.recv_timeout(left) {
                Ok(line) => {
                    let done = line.contains(wanted);
                    lines.push(line);
                    if done {
                        return lines;
                    }
                }
                Err(error) => panic!("no stderr line with {wanted:?} ({error}): {lines:#?}"),
            }
        }
    }

    /// SIGTERM, then the exit status.
    pub(crate) fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(status.success());
        self.child.wait().expect("serve exits")
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client program: found, or `None` after saying loudly why the test skips (a failure
/// under CI).
pub(crate) fn client(name: &str, path: Option<PathBuf>) -> Option<PathBuf> {
    if let Some(path) = path.filter(|p| p.exists()) {
        return Some(path);
    }
    assert!(std::env::var_os("CI").is_none(), "{name} is missing; .ci/run installs it");
    eprintln!("SKIPPED: {name} is not installed here (.ci/run installs it; CI fails without it)");
    None
}

/// The Python venv with kafka-python and confluent-kafka (`SEGLOG_PYTHON`).
pub(crate) fn python() -> Option<PathBuf> {
    client("the Python venv (SEGLOG_PYTHON)", std::env::var_os("SEGLOG_PYTHON").map(PathBuf::from))
}

pub(crate) fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|dir| dir.join(program)).find(|p| p.exists())
    })
}

#[test]
fn kcat_lists_produces_and_consumes() {
    let Some(kcat) = client("kcat", which("kcat")) else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path());
    let lines: String = (1..=1000).map(|i| format!("line-{i}\n")).collect();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        kcat_produce(&kcat, &broker.addr, "kcat", &["-z", codec], &lines);
    }
    let output = Command::new(&kcat)
        .args(["-b", &broker.addr, "-C", "-t", "kcat", "-e", "-f", "%o %s\n"])
        .output()
        .expect("kcat -C");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let got = String::from_utf8_lossy(&output.stdout);
    let want: String =
        (0..5000).map(|offset| format!("{offset} line-{}\n", offset % 1000 + 1)).collect();
    assert_eq!(got, want);

    let output = Command::new(&kcat)
        .args(["-b", &broker.addr, "-L", "-t", "kcat"])
        .output()
        .expect("kcat -L");
    let listing = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(listing.contains("1 brokers:") && listing.contains("(controller)"), "{listing}");
    assert!(listing.contains("topic \"kcat\" with 1 partitions:"), "{listing}");
    assert!(listing.contains("partition 0, leader 1, replicas: 1, isrs: 1"), "{listing}");

    // A balanced consumer (-G): joins the group, reads everything, commits, leaves.
    let output = Command::new(&kcat)
        .args(["-b", &broker.addr, "-G", "kcat-group", "-o", "beginning", "-e", "kcat"])
        .output()
        .expect("kcat -G");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 5000);
    assert!(broker.terminate().success());

    // What the coordinator wrote, as `kafka-dump-log.sh --offsets-decoder` prints it: the
    // group's generation 1 with its member, the offset commit, the empty generation 2.
    let dumped = dump_consumer_offsets(dir.path());
    let records: Vec<&str> = dumped.lines().filter(|line| line.starts_with("| offset: ")).collect();
    assert_eq!(records.len(), 3, "{dumped}");
    assert!(records[0].contains(r#"key: {"type":"2","data":{"group":"kcat-group"}} payload: {"version":"3","data":{"protocolType":"consumer","generation":1,"protocol":"range","leader":"rdkafka-"#), "{dumped}");
    assert!(records[1].contains(r#"key: {"type":"1","data":{"group":"kcat-group","topic":"kcat","partition":0}} payload: {"version":"3","data":{"offset":5000,"leaderEpoch":"#), "{dumped}");
    assert!(records[2].contains(r#""generation":2,"protocol":null,"leader":null,"#), "{dumped}");
    assert!(records[2].ends_with(r#""members":[]}}"#), "{dumped}");
}

#[test]
fn python_clients_produce_and_consume() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/interop.py");
    let output = Command::new(python)
        .arg(script)
        .args([&broker.addr, "interop"])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout.matches(": 500 records in order").count(), 4, "{stdout}");
    // kafka-python takes seglog for Kafka 4.1 (Produce v13), not an older release.
    assert_eq!(stdout.matches("kafka-python infers broker version 4.1\n").count(), 2, "{stdout}");
    assert_eq!(
        stdout.matches("KafkaAdminClient infers broker version 4.1\n").count(),
        1,
        "{stdout}"
    );
    assert!(broker.terminate().success());
}

/// `seglog dump --offsets-decoder` of every `__consumer_offsets` partition in `dir`.
fn dump_consumer_offsets(dir: &Path) -> String {
    std::fs::read_dir(dir)
        .expect("log dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("__consumer_offsets-"))
        })
        .map(|partition| {
            let log = partition.join("00000000000000000000.log");
            let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
                .args(["dump", "--offsets-decoder", "--files"])
                .arg(&log)
                .output()
                .expect("seglog dump");
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            String::from_utf8_lossy(&output.stdout).into_owned()
        })
        .collect()
}

pub(crate) fn python_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python").join(name)
}

/// A consumer group of two with kafka-python and with confluent-kafka, default settings: each
/// is balanced and has consumed everything in under 10 s from the second member's start; the
/// offsets they committed on closing are there after a restart.
#[test]
fn python_consumer_groups_form_fast_and_keep_their_offsets() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path());
    let run = |addr: &str, step: &str| {
        let output = Command::new(&python)
            .arg(python_script("groups.py"))
            .args([addr, "groups", step])
            .output()
            .expect("python runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        eprintln!("{stdout}");
        stdout
    };
    let stdout = run(&broker.addr, "consume");
    assert_eq!(stdout.matches("group of two: balanced").count(), 4, "{stdout}");
    assert_eq!(stdout.matches("had all 4 partitions").count(), 4, "{stdout}");
    assert_eq!(stdout.matches("a third member had partitions").count(), 4, "{stdout}");
    assert!(broker.terminate().success());
    // The KIP-848 group's records, as kafka-dump-log.sh decodes Kafka's: members with their
    // epochs and partitions, then tombstones as they left.
    let dumped = dump_consumer_offsets(dir.path());
    let group = r#""groupId":"groups-consumer-protocol-group""#;
    let kip848 = |kind: &str| {
        dumped
            .lines()
            .filter(|line| line.contains(&format!(r#"key: {{"type":"{kind}","data":{{{group}"#)))
            .collect::<Vec<_>>()
    };
    assert!(kip848("3").iter().any(|line| line.contains(r#""epoch":"#)), "{dumped}");
    assert!(
        kip848("5")
            .iter()
            .any(|line| line.contains(r#""subscribedTopicNames":["groups-consumer-protocol"]"#))
    );
    assert!(
        kip848("8")
            .iter()
            .any(|line| line.contains(r#""state":0,"assignedPartitions":[{"topicId":"#))
    );
    assert!(kip848("8").iter().any(|line| line.ends_with("payload: <DELETE>")), "members left");
    let broker = Broker::start(dir.path());
    let stdout = run(&broker.addr, "committed");
    assert_eq!(stdout.matches("committed offsets survived the restart").count(), 2, "{stdout}");
    assert!(broker.terminate().success());
}

/// SIGKILL while an idempotent producer (confluent-kafka, acks=all) produces and a consumer
/// commits offsets synchronously; the broker comes back on the same port and the clients go
/// on. Afterwards no acknowledged commit has gone backwards, every acknowledged record is there,
/// and no record is there twice.
#[test]
fn sigkill_during_commits_and_idempotent_produce_loses_and_duplicates_nothing() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path());
    let addr = broker.addr.clone();
    let mut load = Command::new(&python)
        .arg(python_script("groups.py"))
        .args([&addr, "crash", "crash-load"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python runs");
    let lines = BufReader::new(load.stdout.take().expect("stdout")).lines();
    let mut acked = std::collections::BTreeSet::new();
    let (mut last_commit, mut commits_before_kill) = (0_i64, None);
    let mut broker = Some(broker);
    let mut done = None;
    for line in lines.map_while(Result::ok) {
        if let Some(value) = line.strip_prefix("ACK ") {
            acked.insert(value.to_owned());
        } else if let Some(offset) = line.strip_prefix("COMMIT ") {
            last_commit = offset.parse().expect("offset");
            if last_commit >= 600 && commits_before_kill.is_none() {
                // Kill -9 in the middle of the load, then start again on the same port.
                let mut killed = broker.take().expect("running");
                killed.child.kill().expect("SIGKILL");
                killed.child.wait().expect("reaped");
                commits_before_kill = Some(last_commit);
                broker = Some(Broker::start_on(dir.path(), &addr));
            }
        } else if let Some(rest) = line.strip_prefix("DONE ") {
            done = Some(rest.to_owned());
        }
    }
    assert!(load.wait().expect("python exits").success());
    assert_eq!(done.as_deref(), Some("0"), "every record delivered in the end");
    assert!(commits_before_kill.is_some(), "the broker was killed during the load");
    let output = Command::new(&python)
        .arg(python_script("groups.py"))
        .args([&addr, "crash", "crash-check"])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let committed: i64 = stdout
        .lines()
        .find_map(|line| line.strip_prefix("COMMITTED "))
        .expect("committed line")
        .parse()
        .expect("offset");
    assert!(committed >= last_commit, "committed offset {committed} < acknowledged {last_commit}");
    let values: Vec<&str> = stdout.lines().filter_map(|line| line.strip_prefix("VALUE ")).collect();
    let distinct: std::collections::BTreeSet<&str> = values.iter().copied().collect();
    assert_eq!(values.len(), distinct.len(), "duplicates in the log");
    let lost: Vec<&String> =
        acked.iter().filter(|value| !distinct.contains(value.as_str())).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    assert_eq!(acked.len(), 2000);
    eprintln!(
        "killed after commit {commits_before_kill:?}; committed {committed}; {} records, none twice",
        values.len()
    );
    assert!(broker.take().expect("running").terminate().success());
}

#[test]
fn sigterm_stops_cleanly_and_the_data_reopens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path());
    let status = broker.terminate();
    assert!(status.success(), "{status:?}");
    assert!(dir.path().join(".kafka_cleanshutdown").exists(), "clean-shutdown marker written");
    assert!(dir.path().join("meta.properties").exists());
    // The directory is unlocked and opens again.
    let broker = Broker::start(dir.path());
    assert!(broker.terminate().success());
}

#[test]
fn server_properties_are_read_and_flags_override_single_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (from_file, from_flag) = (dir.path().join("from-file"), dir.path().join("from-flag"));
    let properties = dir.path().join("server.properties");
    std::fs::write(
        &properties,
        format!(
            "# Kafka's keys\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs={}\nnode.id=7\nseglog.metrics.listener=\nseglog.console.listener=\n",
            from_file.display()
        ),
    )
    .expect("write server.properties");
    let mut child = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .arg("serve")
        .arg("--config")
        .arg(&properties)
        .arg("--log-dir")
        .arg(&from_flag)
        .stderr(Stdio::piped())
        .spawn()
        .expect("seglog serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines().map_while(Result::ok);
    let announced = lines.next().unwrap_or_default();
    assert!(announced.starts_with("seglog: serving Kafka clients on 127.0.0.1:"), "{announced}");
    let broker = Broker { child, addr: String::new(), console: None, stderr: None };
    assert!(broker.terminate().success());
    assert!(from_flag.join("meta.properties").exists(), "the data went to --log-dir");
    assert!(!from_file.exists(), "--log-dir overrides log.dirs");
}

#[test]
fn serve_refuses_a_bad_config_naming_the_key() {
    let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args([
            "serve",
            "--override",
            "num.partitions=zero",
            "--log-dir",
            "/nonexistent/never-created",
        ])
        .output()
        .expect("seglog runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("num.partitions"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// Produces `lines` to `topic` with kcat (acks=all, and `extra` flags), which must succeed.
fn kcat_produce(kcat: &Path, addr: &str, topic: &str, extra: &[&str], lines: &str) {
    let mut producer = Command::new(kcat)
        .args(["-b", addr, "-P", "-t", topic, "-X", "acks=all"])
        .args(extra)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat runs");
    producer.stdin.take().expect("stdin").write_all(lines.as_bytes()).expect("write");
    let output = producer.wait_with_output().expect("kcat -P");
    assert!(
        output.status.success(),
        "kcat -P {extra:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every value of `topic` from the beginning, through kcat (a plain consumer, no group).
fn kcat_values(kcat: &Path, addr: &str, topic: &str) -> Vec<String> {
    let output = Command::new(kcat)
        .args(["-b", addr, "-C", "-t", topic, "-e", "-q", "-f", "%s\n"])
        .output()
        .expect("kcat -C");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
}

/// ListOffsets latest (-1) of `topic` `partition`, through kcat's `-Q`.
fn kcat_latest(kcat: &Path, addr: &str, topic: &str, partition: i32) -> i64 {
    let output = Command::new(kcat)
        .args(["-b", addr, "-Q", "-t", &format!("{topic}:{partition}:-1")])
        .output()
        .expect("kcat -Q");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text} {}", String::from_utf8_lossy(&output.stderr));
    text.split_whitespace()
        .last()
        .and_then(|offset| offset.parse().ok())
        .unwrap_or_else(|| panic!("no offset in {text:?}"))
}

/// Issue 14, point 1: after a SIGKILL and a restart with no new produce, consumers see every
/// acknowledged record and ListOffsets latest is the log end, in each durability mode. Before
/// the fix the high watermark stayed at its last checkpoint (0 here), so consumers got nothing.
/// Topic `after` is produced (acks=all, kcat) and acknowledged before the kill; topic `during`
/// (acks=all, confluent-kafka) is being produced when the broker is killed.
#[test]
fn restart_after_sigkill_serves_every_acknowledged_record() {
    let Some(kcat) = client("kcat", which("kcat")) else { return };
    let Some(python) = python() else { return };
    for mode in ["page-cache", "group-commit", "fsync-every-append"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let durability = format!("seglog.durability={mode}");
        let extra = ["--override", durability.as_str()];
        let broker = Broker::start_with(dir.path(), "127.0.0.1:0", &extra);
        let addr = broker.addr.clone();
        let lines: String = (0..500).map(|i| format!("after-{i}\n")).collect();
        kcat_produce(&kcat, &addr, "after", &[], &lines);
        assert_eq!(kcat_values(&kcat, &addr, "after").len(), 500, "{mode}: all acknowledged");

        let mut load = Command::new(&python)
            .arg(python_script("restart.py"))
            .args([&addr, "during"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python runs");
        let mut acked = Vec::new();
        let mut broker = Some(broker);
        for line in BufReader::new(load.stdout.take().expect("stdout")).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.strip_prefix("ACK ") {
                acked.push(rest.split_whitespace().next().unwrap_or_default().to_owned());
                if acked.len() == 300 {
                    let mut killed = broker.take().expect("running");
                    killed.child.kill().expect("SIGKILL the broker");
                    killed.child.wait().expect("reaped");
                    // No new produce after the restart: the producer goes too.
                    let _ = load.kill();
                }
            }
        }
        let _ = load.wait();
        assert!(acked.len() >= 300, "{mode}: only {} acknowledged", acked.len());

        let broker = Broker::start_with(dir.path(), "127.0.0.1:0", &extra);
        let after = kcat_values(&kcat, &broker.addr, "after");
        assert_eq!(after.len(), 500, "{mode}: acknowledged records invisible after restart");
        assert_eq!(after.first().map(String::as_str), Some("after-0"));
        assert_eq!(kcat_latest(&kcat, &broker.addr, "after", 0), 500, "{mode}");
        let during = kcat_values(&kcat, &broker.addr, "during");
        let served: std::collections::BTreeSet<&str> = during.iter().map(String::as_str).collect();
        let lost: Vec<&String> = acked.iter().filter(|v| !served.contains(v.as_str())).collect();
        assert!(lost.is_empty(), "{mode}: acknowledged but not served: {lost:?}");
        assert_eq!(served.len(), during.len(), "{mode}: a record served twice");
        let latest = kcat_latest(&kcat, &broker.addr, "during", 0);
        assert_eq!(latest, i64::try_from(during.len()).expect("count"), "{mode}: latest = log end");
        eprintln!("{mode}: {} acknowledged, {} served after the restart", acked.len(), latest);
        assert!(broker.terminate().success());
    }
}

/// Issue 14, point 1: a directory written by `seglog produce` leaves checkpoints that say what
/// it wrote (high watermark = log end), and the broker serves every record.
#[test]
fn a_directory_written_by_seglog_produce_is_fully_served() {
    let Some(kcat) = client("kcat", which("kcat")) else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut produce = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["produce", "--topic", "offline", "--log-dir"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("seglog produce");
    let lines: String = (0..1000).map(|i| format!("offline-{i}\n")).collect();
    produce.stdin.take().expect("stdin").write_all(lines.as_bytes()).expect("write");
    let output = produce.wait_with_output().expect("seglog produce");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let checkpoint = std::fs::read_to_string(dir.path().join("replication-offset-checkpoint"))
        .expect("high-watermark checkpoint written");
    assert_eq!(checkpoint, "0\n1\noffline 0 1000\n");
    let broker = Broker::start(dir.path());
    let values = kcat_values(&kcat, &broker.addr, "offline");
    assert_eq!(values.len(), 1000);
    assert_eq!(values.last().map(String::as_str), Some("offline-999"));
    assert_eq!(kcat_latest(&kcat, &broker.addr, "offline", 0), 1000);
    assert!(broker.terminate().success());
}

/// Issue 14, point 1: a Kafka-written directory (3.7.1, `nikhil-kafka-setup`) whose
/// high-watermark checkpoint lags its log end (rewritten to 0 here, as after an unclean stop) is
/// fully served: each partition's records (as `seglog consume` reads them offline) and
/// ListOffsets latest (what Kafka's own checkpoint said at its clean shutdown), the 869 records
/// of `__consumer_offsets-12` included.
#[test]
fn a_kafka_directory_with_a_lagging_high_watermark_checkpoint_is_fully_served() {
    let Some(kcat) = client("kcat", which("kcat")) else { return };
    let Some(fixtures) = seglog_storage::testing::kafka_real_fixtures() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    seglog_storage::testing::copy_tree(&fixtures.join("nikhil-kafka-setup"), dir.path());
    let checkpoint = dir.path().join("replication-offset-checkpoint");
    let original = std::fs::read_to_string(&checkpoint).expect("checkpoint");
    let mut expected = Vec::new();
    let mut rewritten = Vec::new();
    for (idx, line) in original.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [topic, partition, offset] = fields[..] {
            rewritten.push(format!("{topic} {partition} 0\n"));
            let offset: i64 = offset.parse().expect("offset");
            if offset > 0 {
                expected.push((topic.to_owned(), partition.parse::<i32>().expect("p"), offset));
            }
        } else {
            assert!(idx < 2, "header lines only: {line}");
            rewritten.push(format!("{line}\n"));
        }
    }
    std::fs::write(&checkpoint, rewritten.concat()).expect("rewrite the checkpoint");
    assert!(expected.len() >= 10, "{expected:?}");
    // What each partition holds, read offline (retention had emptied some of them).
    let offline = |topic: &str, partition: i32| -> Vec<i64> {
        let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
            .args(["consume", "--topic", topic, "--partition", &partition.to_string()])
            .args(["--format", "%o\n", "--log-dir"])
            .arg(dir.path())
            .output()
            .expect("seglog consume");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).lines().map(|o| o.parse().expect("o")).collect()
    };
    let held: Vec<Vec<i64>> = expected.iter().map(|(t, p, _)| offline(t, *p)).collect();
    assert!(held.iter().map(Vec::len).sum::<usize>() >= 800, "{held:?}");
    let broker = Broker::start_with(dir.path(), "127.0.0.1:0", &["--override", "node.id=0"]);
    for ((topic, partition, log_end), held) in expected.iter().zip(&held) {
        assert_eq!(kcat_latest(&kcat, &broker.addr, topic, *partition), *log_end, "{topic}");
        let output = Command::new(&kcat)
            .args(["-b", &broker.addr, "-C", "-t", topic, "-p", &partition.to_string()])
            .args(["-o", "beginning", "-e", "-q", "-f", "%o\n"])
            .output()
            .expect("kcat -C");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let offsets: Vec<i64> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|offset| offset.parse().expect("offset"))
            .collect();
        assert_eq!(&offsets, held, "{topic}-{partition}: every record is served");
        if let Some(last) = offsets.last() {
            assert_eq!(*last, log_end - 1, "{topic}-{partition}");
        }
    }
    assert!(broker.terminate().success());
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount(8)'s words, `8m`) at `path`; `None` when this machine
    /// does not let the test mount one (not root), said loudly, and a failure under CI.
    fn mount(path: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(path).expect("mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .stderr(Stdio::null())
            .status();
        if status.is_ok_and(|s| s.success()) {
            return Some(Self(path.to_owned()));
        }
        assert!(std::env::var_os("CI").is_none(), "CI runs as root and must mount a tmpfs");
        eprintln!("SKIPPED: cannot mount a tmpfs here (not root); CI fails without it");
        None
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .expect("mount runs");
        assert!(status.success(), "remount {size}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Issue 14, point 6: a full disk is not silent. On an 8 MiB tmpfs, confluent-kafka (acks=all,
/// no retries) produces 16 MiB of 1 KiB records: the broker logs, once, at error level, the
/// directory, the file and the cause, and that the directory is offline; the failed produces
/// get KAFKA_STORAGE_ERROR. Once the file system is grown and the broker restarted, every
/// acknowledged record is served.
#[test]
fn a_full_disk_is_logged_and_no_acknowledged_record_is_lost() {
    let Some(kcat) = client("kcat", which("kcat")) else { return };
    let Some(python) = python() else { return };
    let temp = tempfile::tempdir().expect("tempdir");
    let mount_point = temp.path().join("disk");
    let Some(tmpfs) = Tmpfs::mount(&mount_point, "8m") else { return };
    let log_dir = mount_point.join("data");
    let mut broker = Broker::start(&log_dir);
    let output = Command::new(&python)
        .arg(python_script("restart.py"))
        .args([&broker.addr, "fill", "fill"])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let acked: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("ACK ")).collect();
    let failed: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("ERROR ")).collect();
    // 8 MiB hold at most 8,192 records of 1 KiB.
    assert!(acked.len() > 3000 && acked.len() < 8192, "{} acknowledged", acked.len());
    assert!(
        failed.iter().any(|line| line.starts_with("KAFKA_STORAGE_ERROR ")),
        "Kafka's error code reaches the client: {failed:?}"
    );
    let lines = broker.stderr_until("is offline", Duration::from_secs(30));
    let first = lines
        .iter()
        .find(|line| line.contains("i/o error in log directory"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(first.contains("ERROR"), "{first}");
    assert!(first.contains(&format!("log directory {}:", log_dir.display())), "{first}");
    assert!(first.contains(&log_dir.join("fill-0").display().to_string()), "the file: {first}");
    assert!(first.contains("No space left on device"), "the cause: {first}");
    let offline = lines.last().expect("the offline line");
    assert!(offline.contains("the disk is full"), "{offline}");
    assert_eq!(lines.iter().filter(|l| l.contains("i/o error in log directory")).count(), 1);

    broker.child.kill().expect("stop the broker");
    broker.child.wait().expect("reaped");
    let mut rest: Vec<String> = broker.stderr.take().expect("stderr").iter().collect();
    rest.retain(|line| line.contains("i/o error in log directory"));
    assert!(rest.is_empty(), "the failure is logged once: {rest:#?}");
    tmpfs.resize("64m");
    let broker = Broker::start(&log_dir);
    let served = kcat_values(&kcat, &broker.addr, "fill");
    let served: std::collections::BTreeSet<&str> =
        served.iter().map(|value| value.get(..8).unwrap_or(value)).collect();
    let lost: Vec<&&str> = acked.iter().filter(|v| !served.contains(**v)).collect();
    assert!(lost.is_empty(), "acknowledged but lost after the restart: {lost:?}");
    eprintln!("{} acknowledged, failures {failed:?}; all served after the restart", acked.len());
    drop(broker);
}

/// Log compaction through real clients: a topic created with `cleanup.policy=compact` is
/// compacted by the broker's cleaner thread (Kafka's settings but a short backoff), and a
/// consumer from the beginning sees exactly each key's last value, in offset order, with no
/// tombstone once its horizon has passed (compaction.py says what it writes). Then 100,000
/// offset commits over 1,000 groups leave `__consumer_offsets` within a few segments per
/// partition, and a restart restores every group's last commit.
#[test]
fn the_broker_compacts_topics_and_the_offsets_topic_for_real_clients() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let overrides = [
        "--override",
        "log.cleaner.backoff.ms=100",
        "--override",
        "offsets.topic.segment.bytes=16384",
    ];
    let broker = Broker::start_with(dir.path(), "127.0.0.1:0", &overrides);
    let run = |addr: &str, name: &str, step: &str| {
        let output = Command::new(&python)
            .arg(python_script("compaction.py"))
            .args([addr, name, step])
            .output()
            .expect("python runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        eprintln!("{stdout}");
        stdout
    };
    let stdout = run(&broker.addr, "compacted", "keyed");
    assert!(stdout.contains("exactly the last value of each live key"), "{stdout}");
    let stdout = run(&broker.addr, "cg", "commit");
    assert!(stdout.contains("committed 100000 offsets"), "{stdout}");
    // The cleaner catches up once the commits stop: every partition down to a few segments'
    // worth of bytes (each partition had ~200 KB of commits written in 16 KiB segments).
    let offsets_partitions = || -> (u64, u64) {
        let (mut most_bytes, mut total_bytes) = (0, 0);
        for entry in std::fs::read_dir(dir.path()).expect("log dir") {
            let path = entry.expect("entry").path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if !name.is_some_and(|n| n.starts_with("__consumer_offsets-")) {
                continue;
            }
            let bytes: u64 = std::fs::read_dir(&path)
                .expect("partition")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "log"))
                .filter_map(|p| std::fs::metadata(&p).ok().map(|m| m.len()))
                .sum();
            total_bytes += bytes;
            most_bytes = most_bytes.max(bytes);
        }
        (most_bytes, total_bytes)
    };
    let deadline = std::time::Instant::now() + Duration::from_mins(1);
    let (most_bytes, total_bytes) = loop {
        let (most_bytes, total_bytes) = offsets_partitions();
        if most_bytes <= 4 * 16384 || std::time::Instant::now() > deadline {
            break (most_bytes, total_bytes);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(most_bytes <= 4 * 16384, "a partition of __consumer_offsets holds {most_bytes} bytes");
    // 100,000 commits are over 10 MB of records; compacted, a small part of that is left.
    assert!(total_bytes < 2 * 1024 * 1024, "__consumer_offsets holds {total_bytes} bytes");
    assert!(broker.terminate().success());
    let broker = Broker::start_with(dir.path(), "127.0.0.1:0", &overrides);
    let stdout = run(&broker.addr, "cg", "committed");
    assert!(stdout.contains("every group's last commit survived the restart"), "{stdout}");
    assert!(broker.terminate().success());
}
