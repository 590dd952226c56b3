//! Many partitions within a small descriptor limit (RLIMIT_NOFILE set low with `ulimit -n`): the
//! tools create and read a topic with far more files than descriptors, and the broker serves it
//! to a real client (issue 19's acceptance test, scaled down from 100,000 partitions; the full
//! size is measured by `scripts/scale-bench.sh`, which the note of issue 19 quotes).

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output};

use super::serve::{Broker, python, python_script};

/// `seglog ARGS` with RLIMIT_NOFILE at `nofile`.
fn seglog_limited(nofile: u32, args: &[&str]) -> Output {
    Command::new("sh")
        .args(["-c", r#"ulimit -n "$0" && exec "$@""#])
        .arg(nofile.to_string())
        .arg(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .output()
        .expect("seglog runs")
}

fn ok(output: &Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn log_dir(dir: &Path) -> String {
    dir.to_str().expect("a UTF-8 temp path").to_owned()
}

/// 2,500 partitions are 7,500 files; with `ulimit -n 128` the tools keep 64 open (the budget's
/// floor) and still create, list, produce to, read and verify them all.
#[test]
fn the_tools_handle_a_topic_with_far_more_files_than_descriptors() {
    let temp = tempfile::tempdir().unwrap();
    let dir = log_dir(temp.path());
    let created = ok(
        &seglog_limited(
            128,
            &["topics", "create", "--log-dir", &dir, "--topic", "wide", "--partitions", "2500"],
        ),
        "topics create",
    );
    assert!(created.contains("2500 partitions"), "{created}");
    let partitions = std::fs::read_dir(temp.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("wide-"))
        .count();
    assert_eq!(partitions, 2500);
    // Records into a few partitions, through the tools' append path.
    for partition in ["0", "1249", "2499"] {
        let mut child = Command::new("sh")
            .args(["-c", r#"ulimit -n 128 && exec "$@""#, "sh", env!("CARGO_BIN_EXE_seglog")])
            .args(["produce", "--log-dir", &dir, "--topic", "wide", "--partition", partition])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("seglog produce runs");
        child.stdin.take().unwrap().write_all(b"a\nb\n").unwrap();
        ok(&child.wait_with_output().unwrap(), "produce");
    }
    let listed = ok(
        &seglog_limited(128, &["topics", "describe", "--log-dir", &dir, "--topic", "wide"]),
        "describe",
    );
    let rows: Vec<&str> = listed.lines().skip(1).collect();
    assert_eq!(rows.len(), 2500, "{}", &listed[..listed.len().min(500)]);
    let ends: Vec<&str> =
        rows.iter().filter(|row| row.split('\t').nth(3) == Some("2")).copied().collect();
    assert_eq!(ends.len(), 3, "three partitions end at offset 2: {ends:?}");
    let verified = ok(&seglog_limited(128, &["verify", "--log-dir", &dir]), "verify");
    assert!(
        verified.contains("2500 partitions, clean"),
        "{}",
        verified.lines().last().unwrap_or("")
    );
}

/// The broker under `ulimit -n 512` (64 log files open at most, the rest for connections)
/// serves a 2,000-partition topic: Metadata lists it whole, and confluent-kafka produces to
/// 300 random partitions and reads each back exactly.
#[test]
fn the_broker_serves_a_topic_with_far_more_files_than_descriptors() {
    let Some(python) = python() else { return };
    let temp = tempfile::tempdir().unwrap();
    let dir = log_dir(temp.path());
    ok(
        &seglog_limited(
            512,
            &["topics", "create", "--log-dir", &dir, "--topic", "wide", "--partitions", "2000"],
        ),
        "topics create",
    );
    let broker = Broker::start_limited(temp.path(), 512, &[]);
    wide_py(&python, &broker.addr, "2000", "300", "19");
    let status = broker.terminate();
    assert!(status.success(), "seglog serve exited with {status}");
    // Everything is there after the clean shutdown, within the same limit.
    ok(&seglog_limited(512, &["verify", "--log-dir", &dir]), "verify");
}

/// Issue 19's acceptance at full size: `seglog topics create --partitions 100000` under this
/// machine's own open-files limit, then the broker serves the topic: Metadata lists all 100,000
/// partitions, confluent-kafka produces three records to each of 1,000 random partitions
/// (acks=all, idempotent) and reads each back exactly, and the broker keeps its log files within
/// the descriptor budget (a tenth of RLIMIT_NOFILE) while doing it.
#[test]
fn one_hundred_thousand_partitions_are_created_and_served_under_the_default_limit() {
    const PARTITIONS: &str = "100000";
    let Some(python) = python() else { return };
    let temp = tempfile::tempdir().unwrap();
    let dir = log_dir(temp.path());
    let created = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["topics", "create", "--log-dir", &dir, "--topic", "wide", "--partitions"])
        .arg(PARTITIONS)
        .output()
        .expect("seglog runs");
    assert!(ok(&created, "topics create").contains("100000 partitions"));
    let broker = Broker::start(temp.path());
    wide_py(&python, &broker.addr, PARTITIONS, "1000", "100");
    // The budget is a tenth of the limit the broker raised itself to (its hard limit, which
    // this process shares); the rest of its descriptors are sockets, lock files and the like.
    let hard_limit = hard_nofile_limit();
    let open = std::fs::read_dir(format!("/proc/{}/fd", broker.child.id())).unwrap().count();
    let budget = usize::try_from(hard_limit / 10).unwrap().max(64);
    assert!(open <= budget + 64, "{open} descriptors open, budget {budget} log files");
    let status = broker.terminate();
    assert!(status.success(), "seglog serve exited with {status}");
}

/// `wide.py`: Metadata lists all `partitions` of the topic `wide`, and three records to each of
/// `sample` random partitions (seeded by `seed`) are produced and read back exactly.
fn wide_py(python: &Path, addr: &str, partitions: &str, sample: &str, seed: &str) {
    let output = Command::new(python)
        .arg(python_script("wide.py"))
        .args([addr, "wide", partitions, sample, seed])
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "wide.py: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
}

/// RLIMIT_NOFILE's hard limit, from `ulimit -Hn`.
fn hard_nofile_limit() -> u64 {
    let output = Command::new("sh").args(["-c", "ulimit -Hn"]).output().expect("sh runs");
    let text = String::from_utf8_lossy(&output.stdout);
    text.trim().parse().unwrap_or(u64::MAX / 16)
}
