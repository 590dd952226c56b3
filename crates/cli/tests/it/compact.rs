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
