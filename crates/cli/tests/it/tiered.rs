//! Tiered storage as users run it: `seglog serve` with a bucket on moto (S3's API on
//! 127.0.0.1), 200,000 records over five topics (one per codec) with 1 MiB segments and two
//! segments kept locally, read back from offset 0 by kafka-python and by librdkafka
//! (confluent-kafka), each checking every batch's CRC; the uploaded `.log` objects are the
//! local files byte for byte; ListOffsets -2, -4 and -5 tell the bucket from the disk.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    BrokerId, ListOffsetsRequest, ListOffsetsResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use seglog_remote::moto::{MOTO_CREDENTIALS, Moto, python_with_moto};
use seglog_remote::object_store::ObjectStoreExt;
use seglog_remote::{Manifest, ObjectKind, PartitionLayout, list_manifests, verify_remote};

use crate::serve::{Broker, python, python_script};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
const RECORDS_PER_TOPIC: usize = 40_000;
const BUCKET: &str = "seglog-tiered";
const PREFIX: &str = "it";

/// ListOffsets v9 (which knows -4 and -5) for partition 0 of `topic`: the offset.
fn list_offset(addr: &str, topic: &str, timestamp: i64) -> i64 {
    use std::io::{Read, Write};
    const VERSION: i16 = 9;
    let request = ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
        ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_partitions(vec![
                ListOffsetsPartition::default().with_partition_index(0).with_timestamp(timestamp),
            ]),
    ]);
    let header = RequestHeader::default()
        .with_request_api_key(ListOffsetsRequest::KEY)
        .with_request_api_version(VERSION)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("seglog-test")));
    let mut body = BytesMut::new();
    body.put_i32(0);
    header.encode(&mut body, ListOffsetsRequest::header_version(VERSION)).expect("header");
    request.encode(&mut body, VERSION).expect("request");
    let size = i32::try_from(body.len() - 4).expect("small");
    body[..4].copy_from_slice(&size.to_be_bytes());
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.write_all(&body).expect("send");
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).expect("size");
    let mut frame = vec![0u8; usize::try_from(i32::from_be_bytes(size)).expect("size")];
    stream.read_exact(&mut frame).expect("frame");
    let mut frame = Bytes::from(frame);
    let header_version = ListOffsetsResponse::header_version(VERSION);
    ResponseHeader::decode(&mut frame, header_version).expect("response header");
    let response = ListOffsetsResponse::decode(&mut frame, VERSION).expect("body");
    assert!(!frame.has_remaining(), "trailing bytes");
    let partition = &response.topics[0].partitions[0];
    assert_eq!(partition.error_code, 0, "ListOffsets {timestamp} of {topic}");
    partition.offset
}

/// The base offsets of the `.log` files in a partition directory.
fn local_bases(partition_dir: &Path) -> Vec<i64> {
    let mut bases: Vec<i64> = std::fs::read_dir(partition_dir)
        .expect("partition dir")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    bases.sort_unstable();
    bases
}

fn run_python(python: &Path, addr: &str, step: &str) -> String {
    let output = Command::new(python)
        .arg(python_script("tiered.py"))
        .args([addr, step, &RECORDS_PER_TOPIC.to_string()])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

#[test]
fn two_hundred_thousand_records_round_trip_through_an_s3_bucket_with_real_clients() {
    let Some(python) = python() else { return };
    let Some(moto_python) = python_with_moto() else { return };
    let moto = Moto::start(&moto_python);
    moto.create_bucket(BUCKET);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = Command::new(env!("CARGO_BIN_EXE_seglog"));
    command.envs(MOTO_CREDENTIALS);
    let endpoint = format!("seglog.remote.storage.endpoint={}", moto.endpoint());
    let overrides = [
        "remote.log.storage.system.enable=true",
        &format!("seglog.remote.storage.bucket={BUCKET}"),
        &format!("seglog.remote.storage.prefix={PREFIX}"),
        &endpoint,
        "seglog.remote.storage.allow.http=true",
        "remote.log.manager.task.interval.ms=200",
        "log.retention.check.interval.ms=200",
    ];
    let extra: Vec<&str> = overrides.iter().flat_map(|o| ["--override", o]).collect();
    let broker = Broker::spawn(command, dir.path(), "127.0.0.1:0", &extra);

    let produced = run_python(&python, &broker.addr, "produce");
    assert_eq!(produced.matches("produced tiered-").count(), CODECS.len(), "{produced}");

    // Local retention follows the uploads: each partition keeps its last segments only.
    let deadline = Instant::now() + Duration::from_mins(3);
    for codec in CODECS {
        let partition_dir = dir.path().join(format!("tiered-{codec}-0"));
        while local_bases(&partition_dir).first().is_none_or(|first| *first == 0) {
            assert!(Instant::now() < deadline, "{codec}: nothing left local disk");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    let store = moto.store(BUCKET);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    let manifests: Vec<Manifest> =
        runtime.block_on(list_manifests(store.as_ref(), PREFIX)).expect("manifests");
    assert_eq!(manifests.len(), CODECS.len(), "one manifest per partition");
    for manifest in &manifests {
        let layout =
            PartitionLayout::new(PREFIX, &manifest.topic, manifest.partition, &manifest.topic_id);
        let partition_dir = dir.path().join(format!("{}-0", manifest.topic));
        // Every uploaded .log still on local disk is the same bytes in the bucket.
        let mut compared = 0;
        for entry in &manifest.segments {
            let local = partition_dir.join(format!("{:020}.log", entry.base_offset));
            let Ok(local) = std::fs::read(&local) else { continue };
            let key = layout.object_key(entry.base_offset, entry.id, ObjectKind::Log);
            let remote = runtime
                .block_on(async { store.get(&key).await.expect("get").bytes().await })
                .expect("body");
            assert_eq!(remote.len(), local.len(), "{key}");
            assert!(remote == local.as_slice(), "{key} is not byte-identical to its file");
            compared += 1;
        }
        assert!(compared > 0, "{}: an uploaded segment is still local", manifest.topic);
        let report = runtime.block_on(verify_remote(store.as_ref(), &layout)).expect("verify");
        assert!(report.problems.is_empty(), "{}: {:?}", manifest.topic, report.problems);

        // ListOffsets: the log starts in the bucket, the disk later, and -5 is the last
        // offset the manifest holds (read before and after, as uploads go on).
        let topic = manifest.topic.as_str();
        assert_eq!(list_offset(&broker.addr, topic, -2), 0, "{topic}");
        let earliest_local = list_offset(&broker.addr, topic, -4);
        assert!(earliest_local > 0, "{topic}: {earliest_local}");
        let latest_tiered = list_offset(&broker.addr, topic, -5);
        let after: Vec<Manifest> =
            runtime.block_on(list_manifests(store.as_ref(), PREFIX)).expect("manifests");
        let end_after = after.iter().find(|m| m.topic == topic).map_or(0, Manifest::end_offset);
        assert!(
            (manifest.end_offset() - 1..end_after).contains(&latest_tiered),
            "{topic}: -5 = {latest_tiered}, manifest ends {} then {end_after}",
            manifest.end_offset()
        );
        assert!(latest_tiered >= earliest_local - 1, "{topic}: no gap between bucket and disk");
    }

    let consumed = run_python(&python, &broker.addr, "consume");
    for codec in CODECS {
        for client in ["kafka-python", "confluent-kafka"] {
            let line = format!("{client} tiered-{codec} {RECORDS_PER_TOPIC}\n");
            assert!(consumed.contains(&line), "{line:?} missing from {consumed}");
        }
    }
    assert!(broker.terminate().success());
}
