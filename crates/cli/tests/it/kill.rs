//! Real process kills: `seglog produce` is killed with SIGKILL at a random point of its input, in
//! every durability mode; reopening the directory must give a prefix of the input, in order, with
//! no gap and no garbage, and with the fsync modes every record reported durable must be there.

#![allow(clippy::unwrap_used, clippy::print_stderr, clippy::pedantic)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn line(idx: usize) -> String {
    format!("record-{idx:07}-{}\n", "p".repeat(idx % 53))
}

fn consume(dir: &Path) -> Vec<String> {
    // Killed before it created anything: nothing was kept.
    if !dir.join("seglog-data/k-0").exists() {
        return Vec::new();
    }
    let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .current_dir(dir)
        .args(["consume", "--topic", "k"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(|l| format!("{l}\n")).collect()
}

/// One cycle: produce `n_chunks` chunks of lines, kill, reopen and check.
fn kill_cycle(
    dir: &Path,
    durability: &str,
    n_chunks: usize,
    chunk_lines: usize,
    produced_so_far: &mut usize,
) {
    let report = dir.join("durable.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .current_dir(dir)
        .args(["produce", "--topic", "k", "--durability", durability, "--batch-bytes", "4096"])
        .arg("--report-durable")
        .arg(&report)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let first = *produced_so_far;
    for chunk in 0..n_chunks {
        let text: String =
            (0..chunk_lines).map(|i| line(first + chunk * chunk_lines + i)).collect();
        if stdin.write_all(text.as_bytes()).is_err() {
            break;
        }
    }
    // Kill while the producer is still reading and appending (its stdin stays open).
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    let durable_in_cycle: usize =
        std::fs::read_to_string(&report).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0);
    let kept = consume(dir);
    // Everything kept is a prefix of everything ever written, in order.
    for (idx, got) in kept.iter().enumerate() {
        assert_eq!(got, &line(idx), "{durability}: record {idx} is wrong or out of order");
    }
    assert!(
        kept.len() >= first,
        "{durability}: records from earlier cycles were lost ({} < {first})",
        kept.len()
    );
    if durability != "page-cache" {
        assert!(
            kept.len() >= first + durable_in_cycle,
            "{durability}: {} records were reported durable, {} kept",
            first + durable_in_cycle,
            kept.len()
        );
    }
    let _ = std::fs::remove_file(&report);
    if std::env::var_os("KILL_TRACE").is_some() {
        eprintln!(
            "{durability}: wrote {} lines, durable {durable_in_cycle}, kept {} (+{})",
            n_chunks * chunk_lines,
            kept.len(),
            kept.len() - first
        );
    }
    *produced_so_far = kept.len();
}

#[test]
fn sigkill_during_produce_keeps_a_durable_prefix() {
    let mut state = 0x9E37_79B9u64;
    let mut random = move |n: u64| {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let mut kills = 0;
    for durability in ["fsync-every-append", "group-commit", "page-cache"] {
        let temp = tempfile::tempdir().unwrap();
        let mut produced = 0;
        for _ in 0..12 {
            let n_chunks = 1 + random(40) as usize;
            kill_cycle(temp.path(), durability, n_chunks, 50, &mut produced);
            kills += 1;
        }
        // The directory still verifies after all the kills.
        let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
            .current_dir(temp.path())
            .arg("verify")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{durability}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
    assert_eq!(kills, 36);
}
