//! `seglog compact` on log directories written by Kafka: each `__consumer_offsets` partition
//! keeps exactly the key view (each key's last record, at its offset) computed from the original
//! segments, the result verifies clean, and `seglog dump --offsets-decoder` reads it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use seglog_storage::config::BrokerLogConfig;
use seglog_storage::io::StdFs;
use seglog_storage::log::partition_log::Isolation;
use seglog_storage::manager::{LogManager, SystemClock};

/// A record: offset, key, value.
type Read = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// Every record of every partition of `topic` in the log directory `dir`, read through storage.
fn records(dir: &Path, topic: &str) -> BTreeMap<i32, Vec<Read>> {
    let config = BrokerLogConfig { log_dirs: vec![dir.to_owned()], ..BrokerLogConfig::default() };
    let (manager, _) =
        LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config).expect("open");
    let mut out = BTreeMap::new();
    for tp in manager.partitions().into_iter().filter(|tp| tp.topic == topic) {
        let log = manager.get_log(&tp).expect("log");
        let mut records = Vec::new();
        let mut next = log.log_start_offset().expect("start");
        let end = log.log_end_offset().expect("end");
        while next < end {
            let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true).expect("read");
            if fetch.records.is_empty() {
                break;
            }
            for batch in seglog_format::Batches::new(&fetch.records) {
                let batch = batch.expect("batch").batch;
                next = batch.next_offset();
                if batch.is_control_batch() {
                    continue;
                }
                for record in &batch.records(seglog_format::DecodeLimits::default()).expect("r") {
                    let record = record.expect("record");
                    records.push((
                        record.offset,
                        record.key.map(<[u8]>::to_vec),
                        record.value.map(<[u8]>::to_vec),
                    ));
                }
            }
        }
        out.insert(tp.partition, records);
    }
    manager.shutdown().expect("shutdown");
    out
}

fn key_view(records: &[Read]) -> BTreeMap<Vec<u8>, (i64, Option<Vec<u8>>)> {
    records
        .iter()
        .filter_map(|(offset, key, value)| Some((key.clone()?, (*offset, value.clone()))))
        .collect()
}

fn seglog(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_seglog")).args(args).output().expect("seglog runs")
}

#[test]
fn kafka_written_offsets_topics_compact_to_their_key_view() {
    let Some(root) = seglog_storage::testing::kafka_real_fixtures() else { return };
    let mut shrunk = 0;
    for set in ["nikhil-kafka-setup", "william0423-indexed-offsets", "mscaldas-cp5-lz4"] {
        let temp = tempfile::tempdir().expect("tempdir");
        let (cleaned, original) = (temp.path().join("cleaned"), temp.path().join("original"));
        seglog_storage::testing::copy_tree(&root.join(set), &cleaned);
        seglog_storage::testing::copy_tree(&root.join(set), &original);
        let before = records(&original, "__consumer_offsets");
        assert!(before.values().map(Vec::len).sum::<usize>() > 0, "{set}");
        let dir = cleaned.to_string_lossy().into_owned();
        let output = seglog(&["compact", "--log-dir", &dir, "--topic", "__consumer_offsets"]);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{set}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            stdout.lines().count(),
            before.len(),
            "{set}: a summary per partition: {stdout}"
        );
        let after = records(&cleaned, "__consumer_offsets");
        for (partition, original_records) in &before {
            let cleaned_records = &after[partition];
            assert_eq!(
                key_view(cleaned_records),
                key_view(original_records),
                "{set} partition {partition}: the key view"
            );
            assert!(
                cleaned_records.iter().all(|record| original_records.contains(record)),
                "{set} partition {partition}: every record kept as it was, at its offset"
            );
            shrunk += usize::from(cleaned_records.len() < original_records.len());
        }
        let verified = seglog(&["verify", "--log-dir", &dir]);
        assert_eq!(
            verified.status.code(),
            Some(0),
            "{set}: {}",
            String::from_utf8_lossy(&verified.stdout)
        );
        // Kafka's dump tool decodes the cleaned segments.
        for partition in before.keys() {
            let segment = cleaned
                .join(format!("__consumer_offsets-{partition}"))
                .join("00000000000000000000.log");
            let segment = segment.to_string_lossy().into_owned();
            let dumped = seglog(&["dump", "--offsets-decoder", "--files", &segment]);
            let text = String::from_utf8_lossy(&dumped.stdout).into_owned();
            assert!(dumped.status.success(), "{set}: {text}");
            assert!(text.starts_with(&format!("Dumping {segment}\n")), "{text}");
        }
    }
    assert!(shrunk >= 3, "compaction removed records in {shrunk} partitions");
}

/// `seglog topics describe` shows a compacted partition's dirty ratio and where the cleaner
/// stands; `seglog verify` warns of a leftover `.cleaned` or `.swap` file and of a cleaner
/// checkpoint past the log end, and exits 0 (recovery and the cleaner fix both).
#[test]
fn describe_shows_the_dirty_ratio_and_verify_warns_of_cleaner_leftovers() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("data");
    let dir_arg = dir.to_string_lossy().into_owned();
    let created = seglog(&[
        "topics",
        "create",
        "--log-dir",
        &dir_arg,
        "--topic",
        "c",
        "--config",
        "cleanup.policy=compact",
        "--config",
        "segment.bytes=1024",
    ]);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let mut lines = String::new();
    for i in 0..200 {
        std::fmt::Write::write_fmt(&mut lines, format_args!("key-{}\tvalue-{i}\n", i % 10))
            .expect("a string takes it");
    }
    let mut produce = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["produce", "--log-dir", &dir_arg, "--topic", "c", "--key-separator", "\t"])
        .args(["--batch-bytes", "200"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("produce");
    std::io::Write::write_all(&mut produce.stdin.take().expect("stdin"), lines.as_bytes())
        .expect("write");
    assert!(produce.wait().expect("produce exits").success());
    let describe = |expect: &str| {
        let output = seglog(&["topics", "describe", "--log-dir", &dir_arg, "--topic", "c"]);
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{text}");
        let header = text.lines().next().expect("header");
        assert!(
            header.ends_with("\tDIRTY_RATIO\tCLEANER\tLAST_STABLE_OFFSET\tOPEN_TRANSACTIONS"),
            "{header}"
        );
        let row: Vec<&str> = text.lines().nth(1).expect("row").split('\t').collect();
        let ratio: f64 = row[9].parse().expect("a ratio");
        assert!(row[10].starts_with(expect), "{row:?}");
        ratio
    };
    let dirty = describe("idle, dirty from 0 to ");
    assert!(dirty > 0.5, "{dirty}");
    let compacted = seglog(&["compact", "--log-dir", &dir_arg, "--topic", "c"]);
    assert!(compacted.status.success(), "{}", String::from_utf8_lossy(&compacted.stderr));
    let clean = describe("idle, dirty from ");
    assert!(clean < dirty, "{clean} after, {dirty} before");
    // Leftovers of an interrupted round, and a checkpoint past the log end.
    std::fs::write(dir.join("c-0").join("00000000000000000000.log.cleaned"), b"").expect("write");
    std::fs::write(dir.join("c-0").join("00000000000000000000.index.swap"), b"").expect("write");
    std::fs::write(dir.join("cleaner-offset-checkpoint"), b"0\n1\nc 0 999999\n").expect("write");
    let verified = seglog(&["verify", "--log-dir", &dir_arg]);
    let text = String::from_utf8_lossy(&verified.stdout).into_owned();
    assert_eq!(verified.status.code(), Some(0), "{text}");
    assert!(text.contains("00000000000000000000.log.cleaned: leftover .cleaned file"), "{text}");
    assert!(text.contains("00000000000000000000.index.swap: leftover .swap file"), "{text}");
    assert!(text.contains("c-0 at offset 999999 is past the log end"), "{text}");
    assert!(text.contains("the cleaner starts over from the log start"), "{text}");
}
