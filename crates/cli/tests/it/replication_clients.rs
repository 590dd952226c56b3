//! Scenario 7 of issue 22 (docs/replication.md), its Python part: consumer groups of
//! confluent-kafka and kafka-python whose coordinator's broker is killed with SIGKILL halfway
//! through a replicated topic (`tests/python/coordinator_kill.py`). The librdkafka part runs
//! librdkafka's own suite on the three nodes at replication factor 3
//! (`scripts/librdkafka-suite.sh --cluster --rf 3`).

#![allow(clippy::unwrap_used, reason = "a test: a failed call is the failure")]

use std::path::Path;
use std::process::Command;

use crate::replication::{FAST_FENCING, rf3_cluster};

const TOPIC: &str = "coordinated";

/// Each client's group consumes every record, its commits acknowledged before the kill are
/// kept by the new coordinator, and its final commit is the log end: nothing committed past
/// the data, nothing lost.
#[test]
fn python_groups_keep_their_commits_through_their_coordinators_kill() {
    let Some(python) = crate::serve::python() else { return };
    let root = tempfile::tempdir().unwrap();
    let (cluster, _runtime) = rf3_cluster(root.path(), FAST_FENCING, TOPIC, 3);
    let bootstraps = (1..=3).map(|n| cluster.bootstrap(n)).collect::<Vec<_>>().join(",");
    let output = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/coordinator_kill.py"))
        .args([bootstraps.as_str(), TOPIC])
        .args(cluster.command("kill", "{node}"))
        .arg("--")
        .args(cluster.command("start", "{node}"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}\n{}", cluster.logs());
    println!("scenario 7 (Python groups, coordinator killed): {stdout}");
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["errors"], serde_json::json!([]), "{stdout}");
    for client in ["confluent", "kafka_python"] {
        let result = &summary[client];
        assert!(result["killed"].as_i64().is_some_and(|n| (1..=3).contains(&n)), "{stdout}");
        assert_eq!(result["lost"], 0, "{client}: {stdout}");
        assert!(result["commits_before"].as_i64().unwrap() > 0, "{client}: {stdout}");
        assert!(result["commits_after"].as_i64().unwrap() > 0, "{client}: {stdout}");
        for empty in ["committed_regressed", "committed_past_end", "committed_short"] {
            assert_eq!(result[empty], serde_json::json!([]), "{client} {empty}: {stdout}");
        }
    }
}
