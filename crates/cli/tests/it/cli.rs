//! End-to-end tests of `produce`, `consume`, `topics` and `verify`, spawning the built binary.

#![allow(clippy::unwrap_used, clippy::print_stderr, clippy::pedantic)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn seglog(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        input.write_all(bytes).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn ok(output: &Output) -> String {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn lines(n: usize) -> String {
    (0..n).map(|i| format!("line-{i}-{}\n", "x".repeat(i % 37))).collect()
}

#[test]
fn two_hundred_thousand_lines_round_trip_with_every_codec() {
    let temp = tempfile::tempdir().unwrap();
    let input = lines(200_000);
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("t-{codec}");
        let produced = seglog(
            temp.path(),
            &["produce", "--topic", &topic, "--compression", codec],
            Some(input.as_bytes()),
        );
        ok(&produced);
        let stderr = String::from_utf8_lossy(&produced.stderr).into_owned();
        assert!(stderr.contains("produced 200000 records"), "{stderr}");
        assert!(stderr.contains(&format!("{topic}-0: 0..199999")), "{stderr}");
        let consumed = ok(&seglog(temp.path(), &["consume", "--topic", &topic], None));
        assert_eq!(consumed, input, "{codec}");
    }
    let verified = ok(&seglog(temp.path(), &["verify"], None));
    assert!(verified.contains("5 partitions, clean"), "{verified}");
}

#[test]
fn keys_partitions_and_formats() {
    let temp = tempfile::tempdir().unwrap();
    let input: String = (0..300).map(|i| format!("k{}:v{i}\n", i % 7)).collect();
    ok(&seglog(
        temp.path(),
        &["produce", "--topic", "keyed", "--partitions", "3", "--key-separator", ":"],
        Some(input.as_bytes()),
    ));
    let out =
        ok(&seglog(temp.path(), &["consume", "--topic", "keyed", "--format", "%p %k %v\\n"], None));
    assert_eq!(out.lines().count(), 300);
    // A key always lands in the same partition, in input order within it.
    let mut partition_of = std::collections::BTreeMap::new();
    for line in out.lines() {
        let mut fields = line.split(' ');
        let (partition, key) =
            (fields.next().unwrap().to_owned(), fields.next().unwrap().to_owned());
        assert_eq!(partition_of.entry(key).or_insert(partition.clone()), &partition);
    }
    let describe = ok(&seglog(temp.path(), &["topics", "describe", "--topic", "keyed"], None));
    assert_eq!(describe.lines().count(), 4, "{describe}");
    assert_eq!(ok(&seglog(temp.path(), &["topics", "list"], None)), "keyed\n");
}

#[test]
fn from_timestamp_returns_the_first_record_at_or_after_it() {
    let temp = tempfile::tempdir().unwrap();
    ok(&seglog(
        temp.path(),
        &["produce", "--topic", "ts", "--batch-bytes", "1"],
        Some(lines(50).as_bytes()),
    ));
    let all = ok(&seglog(temp.path(), &["consume", "--topic", "ts", "--format", "%o %T\\n"], None));
    let records: Vec<(i64, i64)> = all
        .lines()
        .map(|l| {
            let (o, t) = l.split_once(' ').unwrap();
            (o.parse().unwrap(), t.parse().unwrap())
        })
        .collect();
    for &(_, timestamp) in records.iter().step_by(7) {
        let expected = records.iter().find(|(_, t)| *t >= timestamp).unwrap().0;
        let found = ok(&seglog(
            temp.path(),
            &[
                "consume",
                "--topic",
                "ts",
                "--from",
                &format!("ts:{timestamp}"),
                "--max",
                "1",
                "--format",
                "%o",
            ],
            None,
        ));
        assert_eq!(found, expected.to_string());
    }
    let after_all = ok(&seglog(
        temp.path(),
        &["consume", "--topic", "ts", "--from", "ts:99999999999999", "--format", "%o"],
        None,
    ));
    assert_eq!(after_all, "");
}

fn segment(temp: &Path, file: &str) -> std::path::PathBuf {
    temp.join("seglog-data/v-0").join(file)
}

#[test]
fn verify_flags_damage_and_repair_keeps_the_intact_prefix() {
    let temp = tempfile::tempdir().unwrap();
    let input = lines(5_000);
    ok(&seglog(temp.path(), &["produce", "--topic", "v"], Some(input.as_bytes())));
    assert!(ok(&seglog(temp.path(), &["verify"], None)).contains("clean"));
    let log = segment(temp.path(), "00000000000000000000.log");
    let original = std::fs::read(&log).unwrap();

    // A flipped byte in the middle.
    let mut flipped = original.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    std::fs::write(&log, &flipped).unwrap();
    let verified = seglog(temp.path(), &["verify"], None);
    assert_eq!(verified.status.code(), Some(1));
    let report = String::from_utf8_lossy(&verified.stdout).into_owned();
    assert!(report.contains("PROBLEMS FOUND") && report.contains("record is corrupt"), "{report}");
    let repaired = ok(&seglog(temp.path(), &["verify", "--repair"], None));
    assert!(
        repaired.contains("repaired v-0:") && repaired.contains("bytes truncated"),
        "{repaired}"
    );
    assert!(ok(&seglog(temp.path(), &["verify"], None)).contains("clean"));
    let kept = ok(&seglog(temp.path(), &["consume", "--topic", "v"], None));
    assert!(!kept.is_empty() && input.starts_with(&kept), "the intact prefix survives");
    assert!(kept.len() < input.len());

    // A truncated tail.
    let temp = tempfile::tempdir().unwrap();
    ok(&seglog(temp.path(), &["produce", "--topic", "v"], Some(input.as_bytes())));
    let log = segment(temp.path(), "00000000000000000000.log");
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 100]).unwrap();
    let report =
        String::from_utf8_lossy(&seglog(temp.path(), &["verify"], None).stdout).into_owned();
    assert!(report.contains("torn batch"), "{report}");
    ok(&seglog(temp.path(), &["verify", "--repair"], None));
    let kept = ok(&seglog(temp.path(), &["consume", "--topic", "v"], None));
    assert!(input.starts_with(&kept) && kept.len() < input.len());

    // A deleted index.
    let temp = tempfile::tempdir().unwrap();
    ok(&seglog(temp.path(), &["produce", "--topic", "v"], Some(input.as_bytes())));
    std::fs::remove_file(segment(temp.path(), "00000000000000000000.index")).unwrap();
    let report =
        String::from_utf8_lossy(&seglog(temp.path(), &["verify"], None).stdout).into_owned();
    assert!(report.contains("warning: ") && report.contains(".index: missing"), "{report}");
    ok(&seglog(temp.path(), &["verify", "--repair"], None));
    assert!(segment(temp.path(), "00000000000000000000.index").exists());
    assert!(ok(&seglog(temp.path(), &["verify"], None)).contains("clean"));
    assert_eq!(ok(&seglog(temp.path(), &["consume", "--topic", "v"], None)), input);
}

#[test]
fn bad_input_gets_one_line_errors_and_exit_codes() {
    let temp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], i32, &str); 5] = [
        (
            &["consume", "--topic", "x", "--log-dir", "missing"],
            1,
            "log directory missing does not exist",
        ),
        (&["topics", "create", "--topic", "../etc"], 1, "invalid topic name"),
        (&["produce", "--topic", "t", "--compression", "brotli"], 1, "unknown compression"),
        (&["verify", "--log-dir", "nowhere"], 1, "does not exist"),
        (&["consume"], 2, "--topic"),
    ];
    for (args, code, message) in cases {
        let output = seglog(temp.path(), args, Some(b""));
        assert_eq!(output.status.code(), Some(code), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
        if code == 1 {
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
        }
    }
    ok(&seglog(temp.path(), &["produce", "--topic", "t"], Some(b"a\nb\n")));
    let output = seglog(temp.path(), &["consume", "--topic", "t", "--from", "99"], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("out of range"));
}

fn kafka_real() -> Option<std::path::PathBuf> {
    seglog_storage::testing::kafka_real_fixtures()
}

fn copy_tree(from: &Path, to: &Path) {
    seglog_storage::testing::copy_tree(from, to);
}

/// A Kafka log directory copied to a temp dir: verify exits 0, and consume returns every record.
#[test]
fn kafka_written_fixture_sets_verify_and_consume_completely() {
    let Some(root) = kafka_real() else { return };
    for (set, topic, expected_records) in [
        ("erickimm-multisegment", "stock-trades", 5_579),
        ("seanorth-snappy", "some-topic", 9),
        ("biggerbrain-gzip", "lsx1", 14),
        ("william0423-indexed-offsets", "debug_topic", 40),
        ("williamjie-kafka-1.x", "test", 2_032),
    ] {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("data");
        copy_tree(&root.join(set), &dir);
        let dir_arg = dir.to_string_lossy().into_owned();
        let verified = seglog(temp.path(), &["verify", "--log-dir", &dir_arg], None);
        let report = String::from_utf8_lossy(&verified.stdout).into_owned();
        assert_eq!(verified.status.code(), Some(0), "{set}: {report}");
        let consumed = ok(&seglog(
            temp.path(),
            &["consume", "--log-dir", &dir_arg, "--topic", topic, "--format", "%o\\n"],
            None,
        ));
        let offsets: Vec<i64> = consumed.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(offsets.len(), expected_records, "{set}");
        assert_eq!(
            offsets,
            (0..expected_records as i64).collect::<Vec<_>>(),
            "{set}: every record in order"
        );
    }
}

/// A whole Kafka 3.7 broker directory, where every record of some partitions was deleted: their
/// only segment is empty and named by the old log end offset (`00000000000000000001.log`), which the replication
/// checkpoint also holds. Kafka's log end offset is then that base offset, so verify is clean.
#[test]
fn verify_takes_an_empty_segment_base_as_the_log_end() {
    let Some(root) = kafka_real() else { return };
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    copy_tree(&root.join("nikhil-kafka-setup"), &dir);
    let dir_arg = dir.to_string_lossy().into_owned();
    let verified = seglog(temp.path(), &["verify", "--log-dir", &dir_arg], None);
    let report = String::from_utf8_lossy(&verified.stdout).into_owned();
    assert_eq!(verified.status.code(), Some(0), "{report}");
    for line in [
        "my-first-topic-0: 1 segments, 0 batches, 0 records, log end 1: ok",
        "my-first-topic-2: 1 segments, 0 batches, 0 records, log end 2: ok",
        "nikhilDemo-0: 1 segments, 3 batches, 3 records, log end 3: ok",
    ] {
        assert!(report.lines().any(|l| l == line), "missing {line:?} in {report}");
    }
    let consumed = ok(&seglog(
        temp.path(),
        &["consume", "--log-dir", &dir_arg, "--topic", "__consumer_offsets", "--format", "%o\\n"],
        None,
    ));
    assert_eq!(consumed.lines().count(), 901, "every __consumer_offsets record");
}

/// `seglog bench` runs end to end (a tiny run) and ends with the machine-readable ratio line.
#[test]
fn bench_runs_and_prints_the_ratio_line() {
    let temp = tempfile::tempdir().unwrap();
    let json = temp.path().join("bench.json");
    let output = seglog(
        temp.path(),
        &["bench", "--total-mib", "4", "--dir", "b", "--json", json.to_str().unwrap()],
        None,
    );
    let stdout = ok(&output);
    let last = stdout.lines().last().unwrap();
    for key in [
        "ratio_vs_raw_write=",
        "ratio_vs_commitlog_records=",
        "ratio_page_cache_append_vs_raw=",
        "ratio_commitlog_vs_raw_page_cache=",
        "ratio_read_vs_commitlog=",
        "ratio_read_vs_raw=",
    ] {
        assert!(last.contains(key), "{last}");
    }
    let figures: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(figures["append_mb_per_s"].as_f64().unwrap() > 0.0);
    assert!(figures["raw_page_cache_write_mb_per_s"].as_f64().unwrap() > 0.0);
    assert!(!temp.path().join("b").exists(), "the run directory is removed");
}

/// `seglog bench --workload loops` (what `scripts/instructions.sh` counts under callgrind) runs
/// both loops and reports the records each appended.
#[test]
fn bench_loops_runs_both_append_loops_and_reports_the_records() {
    let temp = tempfile::tempdir().unwrap();
    let output = seglog(
        temp.path(),
        &[
            "bench",
            "--workload",
            "loops",
            "--total-mib",
            "1",
            "--record-bytes",
            "100",
            "--dir",
            "b",
        ],
        None,
    );
    let stdout = ok(&output);
    let last = stdout.lines().last().unwrap();
    let line: std::collections::BTreeMap<&str, u64> = last
        .strip_prefix("loops ")
        .unwrap_or_else(|| panic!("{last}"))
        .split(' ')
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap();
            (key, value.parse().unwrap())
        })
        .collect();
    assert_eq!(line["record_bytes"], 100);
    assert!(line["batches"] >= 1, "{last}");
    assert_eq!(line["records"], line["batches"] * line["records_per_batch"], "{last}");
    assert!(line["batches"] * line["batch_bytes"] <= 1 << 20, "{last}");
    assert!(!temp.path().join("b").exists(), "the run directory is removed");
}

/// `seglog bench --workload compact` runs end to end (tiny): the ratio line's four figures
/// parse, and the cleaned log kept one record per key (and the batch after the roll), so it
/// is smaller than the dirty one.
#[test]
fn bench_compact_cleans_and_prints_its_ratio_line() {
    let temp = tempfile::tempdir().unwrap();
    let json = temp.path().join("bench.json");
    let output = seglog(
        temp.path(),
        &[
            "bench",
            "--workload",
            "compact",
            "--total-mib",
            "8",
            "--producer-secs",
            "0.5",
            "--dedupe-buffer-mib",
            "16",
            "--dir",
            "b",
            "--json",
            json.to_str().unwrap(),
        ],
        None,
    );
    let stdout = ok(&output);
    let last = stdout.lines().last().unwrap();
    let line: std::collections::BTreeMap<&str, f64> = last
        .split(' ')
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap();
            (key, value.parse().unwrap())
        })
        .collect();
    let keys: Vec<&str> = line.keys().copied().collect();
    assert_eq!(
        keys,
        [
            "peak_rss_mib",
            "ratio_append_p99_with_cleaner",
            "ratio_cleaner_vs_raw_read_write",
            "rss_budget_mib"
        ],
        "{last}"
    );
    assert!(line.values().all(|v| v.is_finite() && *v > 0.0), "{last}");
    assert_eq!(line["rss_budget_mib"], 16.0 + 64.0, "{last}");
    let figures: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let figure = |key: &str| figures[key].as_f64().unwrap();
    assert!(figure("compact_bytes_after") < figure("compact_bytes_before") / 4.0, "{figures}");
    assert!(figure("compact_records_after") < figure("compact_records_before"), "{figures}");
    assert!(figure("compact_records_after") > figure("compact_keys"), "{figures}");
    assert!(figure("cleaner_rounds") >= 1.0 && figure("cleaner_bytes_read") > 0.0, "{figures}");
    assert!(figure("producer_appends_with_cleaner") > 0.0, "{figures}");
    assert!(!temp.path().join("b").exists(), "the run directory is removed");
}

/// Issue 14, point 7: `--log-dir` is global, so it may follow the subcommand of `topics` as well
/// as precede it (before, `topics create --log-dir D` was a usage error).
#[test]
fn log_dir_is_taken_before_or_after_a_nested_subcommand() {
    let temp = tempfile::tempdir().unwrap();
    ok(&seglog(temp.path(), &["topics", "create", "--log-dir", "a", "--topic", "after"], None));
    ok(&seglog(temp.path(), &["topics", "--log-dir", "a", "create", "--topic", "before"], None));
    let listed = ok(&seglog(temp.path(), &["topics", "list", "--log-dir", "a"], None));
    assert_eq!(listed, "after\nbefore\n");
    assert!(!temp.path().join("seglog-data").exists(), "nothing went to the default directory");
}
