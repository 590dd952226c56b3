//! Tiered storage as users run it: `seglog serve` with a bucket on moto (S3's API on
//! 127.0.0.1), 200,000 records over five topics (one per codec) with 1 MiB segments and two
//! segments kept locally, read back from offset 0 by kafka-python and by librdkafka
//! (confluent-kafka), each checking every batch's CRC; the uploaded `.log` objects are the
//! local files byte for byte; ListOffsets -2, -4 and -5 tell the bucket from the disk. And 20
//! SIGKILLs during uploads, expiries and compaction's re-uploads leave the bucket consistent.

#![allow(clippy::print_stderr, reason = "a failed seeded test prints its seed")]
#![allow(clippy::format_collect, reason = "test input built line by line")]

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

/// `seglog serve`'s `--override` arguments for tiering to moto's bucket, with the tiering and
/// retention tasks every `interval_ms`, and `more` keys.
fn tiered_overrides(moto: &Moto, interval_ms: u64, more: &[&str]) -> Vec<String> {
    let keys = [
        "remote.log.storage.system.enable=true".to_owned(),
        format!("seglog.remote.storage.bucket={BUCKET}"),
        format!("seglog.remote.storage.prefix={PREFIX}"),
        format!("seglog.remote.storage.endpoint={}", moto.endpoint()),
        "seglog.remote.storage.allow.http=true".to_owned(),
        format!("remote.log.manager.task.interval.ms={interval_ms}"),
        format!("log.retention.check.interval.ms={interval_ms}"),
    ];
    keys.into_iter()
        .chain(more.iter().map(|key| (*key).to_owned()))
        .flat_map(|key| ["--override".to_owned(), key])
        .collect()
}

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
    let extra = tiered_overrides(&moto, 200, &[]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
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
    // Every closed segment uploaded (the producer is done): the manifests end where the
    // active segments begin.
    let deadline = Instant::now() + Duration::from_mins(3);
    let manifests = loop {
        let manifests: Vec<Manifest> =
            runtime.block_on(list_manifests(store.as_ref(), PREFIX)).expect("manifests");
        let all_uploaded = manifests.len() == CODECS.len()
            && manifests.iter().all(|manifest| {
                let partition_dir = dir.path().join(format!("{}-0", manifest.topic));
                local_bases(&partition_dir).last() == Some(&manifest.end_offset())
            });
        if all_uploaded {
            break manifests;
        }
        assert!(Instant::now() < deadline, "the closed segments never all went up");
        std::thread::sleep(Duration::from_millis(100));
    };
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
    check_tools(&moto, dir.path(), &runtime);
}

/// `seglog` with the bucket's flags.
fn seglog_with_bucket(moto: &Moto, args: &[&str]) -> std::process::Output {
    let endpoint = moto.endpoint();
    Command::new(env!("CARGO_BIN_EXE_seglog"))
        .envs(MOTO_CREDENTIALS)
        .args(args)
        .args(["--bucket", BUCKET, "--prefix", PREFIX, "--endpoint", &endpoint, "--allow-http"])
        .output()
        .expect("seglog runs")
}

/// The tools on the bucket the round trip left: `verify --remote`, `topics describe` with the
/// remote columns, `dump` of an object by its `s3://` URL, and `verify --remote` again after an
/// object is damaged.
fn check_tools(moto: &Moto, dir: &Path, runtime: &tokio::runtime::Runtime) {
    let store = moto.store(BUCKET);
    let manifests: Vec<Manifest> =
        runtime.block_on(list_manifests(store.as_ref(), PREFIX)).expect("manifests");
    let verified = seglog_with_bucket(moto, &["verify", "--remote"]);
    let text = String::from_utf8_lossy(&verified.stdout).into_owned();
    assert!(verified.status.success(), "{text}{}", String::from_utf8_lossy(&verified.stderr));
    for manifest in &manifests {
        let line = format!(
            "{}-0: {} segments, offsets [{}, {}), manifest version {}, writer epoch {}: OK",
            manifest.topic,
            manifest.segments.len(),
            manifest.log_start_offset,
            manifest.end_offset(),
            manifest.manifest_version,
            manifest.writer_epoch
        );
        assert!(text.contains(&line), "{line:?} missing from {text}");
    }

    let log_dir = dir.display().to_string();
    let described = seglog_with_bucket(moto, &["topics", "--log-dir", &log_dir, "describe"]);
    let text = String::from_utf8_lossy(&described.stdout).into_owned();
    assert!(described.status.success(), "{}", String::from_utf8_lossy(&described.stderr));
    let header: Vec<&str> = text.lines().next().expect("header").split('\t').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).expect(name);
    for manifest in &manifests {
        let row: Vec<&str> = text
            .lines()
            .map(|line| line.split('\t').collect::<Vec<_>>())
            .find(|row| row[0] == manifest.topic)
            .expect("a row per partition");
        assert_eq!(row[column("REMOTE_END_OFFSET")], manifest.end_offset().to_string());
        assert_eq!(row[column("REMOTE_SEGMENTS")], manifest.segments.len().to_string());
        assert_eq!(row[column("LOG_START_OFFSET")], "0");
        let local: i64 = row[column("LOCAL_LOG_START_OFFSET")].parse().expect("offset");
        assert!(local > 0 && local <= manifest.end_offset(), "{row:?}");
    }

    let first = &manifests[0];
    let layout = PartitionLayout::new(PREFIX, &first.topic, 0, &first.topic_id);
    let key = layout.object_key(0, first.segments[0].id, ObjectKind::Log);
    let url = format!("s3://{BUCKET}/{key}");
    let dumped = seglog_with_bucket(moto, &["dump", "--files", &url]);
    let text = String::from_utf8_lossy(&dumped.stdout).into_owned();
    assert!(dumped.status.success(), "{}", String::from_utf8_lossy(&dumped.stderr));
    assert!(text.starts_with(&format!("Dumping {url}\nLog starting offset: 0\n")), "{text:.300}");
    assert!(text.contains("baseOffset: 0 lastOffset: "), "{text:.300}");

    runtime
        .block_on(store.put(&key, Bytes::from_static(b"not a segment").into()))
        .expect("overwrite");
    let damaged = seglog_with_bucket(moto, &["verify", "--remote"]);
    let text = String::from_utf8_lossy(&damaged.stdout).into_owned();
    assert_eq!(damaged.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("  problem: {key} is damaged: ")), "{text}");
}

/// A tiered topic of 4 KiB segments, one kept locally.
const SMALL_TIERED: &[&str] =
    &["remote.storage.enable=true", "segment.bytes=4096", "local.retention.bytes=4096"];

/// `seglog topics create` of `topic` with `configs` in the stopped broker's directory `dir`.
fn create_offline(dir: &Path, topic: &str, configs: &[&str]) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_seglog"));
    command.args(["topics", "--log-dir"]).arg(dir).args(["create", "--topic", topic]);
    for config in configs {
        command.args(["--config", config]);
    }
    let output = command.output().expect("seglog topics create");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// Prints the crash loop's seed if the test fails.
struct SeedOnFailure(u64);

impl Drop for SeedOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("crash loop failed with SEED={}", self.0);
        }
    }
}

fn kcat_produce(kcat: &Path, addr: &str, topic: &str, keyed: bool, lines: &str) {
    use std::io::Write;
    let mut command = Command::new(kcat);
    command.args(["-b", addr, "-P", "-t", topic, "-X", "acks=all"]);
    if keyed {
        command.arg("-K:");
    }
    let mut child = command.stdin(std::process::Stdio::piped()).spawn().expect("kcat runs");
    child.stdin.take().expect("stdin").write_all(lines.as_bytes()).expect("write");
    assert!(child.wait().expect("kcat exits").success(), "kcat produce to {topic}");
}

/// Values `from..from + 100 * batches` produced as `batches` kcat runs of 100 lines (one
/// batch each, so that 4 KiB segments roll); returns the next value.
fn kcat_produce_batches(
    kcat: &Path,
    addr: &str,
    topic: &str,
    from: usize,
    batches: usize,
) -> usize {
    for batch in 0..batches {
        let first = from + batch * 100;
        let lines: String = (first..first + 100).map(|n| format!("{n:0>30}\n")).collect();
        kcat_produce(kcat, addr, topic, false, &lines);
    }
    from + batches * 100
}

/// Every record of partition 0 from the beginning to the high watermark: (offset, key, value).
fn kcat_consume(kcat: &Path, addr: &str, topic: &str) -> Vec<(i64, String, String)> {
    kcat_consume_from(kcat, addr, topic, "beginning")
}

/// Every record of partition 0 from `from` (kcat's `-o`) to the high watermark.
fn kcat_consume_from(
    kcat: &Path,
    addr: &str,
    topic: &str,
    from: &str,
) -> Vec<(i64, String, String)> {
    let output = Command::new(kcat)
        .args(["-b", addr, "-C", "-t", topic, "-p", "0", "-o", from, "-e", "-q"])
        .args(["-f", "%o\t%k\t%s\n"])
        .output()
        .expect("kcat runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let mut fields = line.splitn(3, '\t');
            let offset = fields.next().and_then(|o| o.parse().ok()).expect("offset");
            let key = fields.next().unwrap_or_default().to_owned();
            (offset, key, fields.next().unwrap_or_default().to_owned())
        })
        .collect()
}

/// After a restart: the manifests settle (no change over half a second, so retention and the
/// uploads the kill interrupted are done), every entry's objects are there with their sizes
/// and CRCs, GC has left no orphan, and every offset of [log start, high watermark) of the
/// delete topic is read once, in order.
fn check_after_restart(
    store: &std::sync::Arc<dyn seglog_remote::object_store::ObjectStore>,
    runtime: &tokio::runtime::Runtime,
    addr: &str,
    kcat: &Path,
) -> usize {
    let deadline = Instant::now() + Duration::from_mins(1);
    let mut last_versions = Vec::new();
    let manifests = loop {
        let manifests: Vec<Manifest> =
            runtime.block_on(list_manifests(store.as_ref(), PREFIX)).expect("manifests");
        let versions: Vec<u64> = manifests.iter().map(|m| m.manifest_version).collect();
        let mut clean = true;
        for manifest in &manifests {
            let layout = PartitionLayout::new(
                PREFIX,
                &manifest.topic,
                manifest.partition,
                &manifest.topic_id,
            );
            let report = runtime.block_on(verify_remote(store.as_ref(), &layout)).expect("verify");
            assert!(report.problems.is_empty(), "{}: {:?}", manifest.topic, report.problems);
            clean &= report.orphans.is_empty();
        }
        if clean && versions == last_versions && manifests.len() == 2 {
            break manifests;
        }
        assert!(Instant::now() < deadline, "the bucket never settled: {manifests:?}");
        last_versions = versions;
        std::thread::sleep(Duration::from_millis(500));
    };
    let log_start = list_offset(addr, "crash-delete", -2);
    let high_watermark = list_offset(addr, "crash-delete", -1);
    let records = kcat_consume(kcat, addr, "crash-delete");
    let offsets: Vec<i64> = records.iter().map(|(offset, _, _)| *offset).collect();
    assert_eq!(offsets, (log_start..high_watermark).collect::<Vec<_>>(), "each offset once");
    let numbers: Vec<u64> = records
        .iter()
        .map(|(_, _, value)| value.trim_start_matches("d-").parse().expect("n"))
        .collect();
    assert!(numbers.windows(2).all(|pair| pair[0] + 1 == pair[1]), "values in order, no gap");
    manifests.iter().map(|manifest| manifest.segments.len()).sum()
}

#[test]
fn twenty_sigkills_during_uploads_expiry_and_compaction_keep_the_bucket_consistent() {
    use std::collections::BTreeMap;
    let Some(kcat) = crate::serve::client("kcat", crate::serve::which("kcat")) else { return };
    let Some(moto_python) = python_with_moto() else { return };
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    let _seed_note = SeedOnFailure(seed);
    let mut rng = seglog_storage::testing::Rng(seed);
    let moto = Moto::start(&moto_python);
    moto.create_bucket(BUCKET);
    let store = moto.store(BUCKET);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    let dir = tempfile::tempdir().expect("tempdir");
    let create = |topic: &str, configs: &[&str]| create_offline(dir.path(), topic, configs);
    create(
        "crash-delete",
        &[
            "remote.storage.enable=true",
            "segment.bytes=8192",
            "local.retention.bytes=8192",
            "retention.bytes=65536",
        ],
    );
    create(
        "crash-compact",
        &[
            "remote.storage.enable=true",
            "cleanup.policy=compact",
            "segment.bytes=8192",
            "min.cleanable.dirty.ratio=0.01",
            "file.delete.delay.ms=200",
        ],
    );
    let extra = tiered_overrides(&moto, 50, &["log.cleaner.backoff.ms=50"]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let start = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_seglog"));
        command.envs(MOTO_CREDENTIALS);
        Broker::spawn(command, dir.path(), "127.0.0.1:0", &extra)
    };
    let mut next_number = 0u64;
    let mut reference: BTreeMap<String, String> = BTreeMap::new();
    let mut most_segments = 0;
    for kill in 0..20 {
        let mut broker = start();
        let segments = check_after_restart(&store, &runtime, &broker.addr, &kcat);
        most_segments = most_segments.max(segments);
        let lines: String = (next_number..next_number + 400).map(|n| format!("d-{n}\n")).collect();
        next_number += 400;
        kcat_produce(&kcat, &broker.addr, "crash-delete", false, &lines);
        let keyed: String = (0..300)
            .map(|i| {
                let (key, value) = (format!("key-{}", rng.below(40)), format!("v-{kill}-{i}"));
                reference.insert(key.clone(), value.clone());
                format!("{key}:{value}\n")
            })
            .collect();
        kcat_produce(&kcat, &broker.addr, "crash-compact", true, &keyed);
        // A random moment of the uploads, expiries and re-uploads that follow.
        std::thread::sleep(Duration::from_millis(rng.below(600)));
        broker.child.kill().expect("SIGKILL");
        broker.child.wait().expect("killed");
    }
    let broker = start();
    check_after_restart(&store, &runtime, &broker.addr, &kcat);
    let compacted = kcat_consume(&kcat, &broker.addr, "crash-compact");
    let offsets: Vec<i64> = compacted.iter().map(|(offset, _, _)| *offset).collect();
    assert!(offsets.windows(2).all(|pair| pair[0] < pair[1]), "no offset twice");
    let mut view = BTreeMap::new();
    for (_, key, value) in compacted {
        view.insert(key, value);
    }
    assert_eq!(view, reference, "the compacted topic's view survives 20 kills");
    assert!(most_segments > 0, "something was tiered");
    assert!(broker.terminate().success());
}

/// The manifest of the one partition in the bucket, once there is one.
fn the_manifest(
    store: &std::sync::Arc<dyn seglog_remote::object_store::ObjectStore>,
    runtime: &tokio::runtime::Runtime,
) -> Option<Manifest> {
    runtime.block_on(list_manifests(store.as_ref(), PREFIX)).expect("manifests").pop()
}

/// Polls the bucket's manifest every 50 ms until `done` holds, for at most a minute.
fn wait_for_manifest(
    store: &std::sync::Arc<dyn seglog_remote::object_store::ObjectStore>,
    runtime: &tokio::runtime::Runtime,
    what: &str,
    done: impl Fn(&Manifest) -> bool,
) -> Manifest {
    let deadline = Instant::now() + Duration::from_mins(1);
    loop {
        if let Some(manifest) = the_manifest(store, runtime).filter(|m| done(m)) {
            return manifest;
        }
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_second_serve_process_on_the_same_bucket_fences_the_first() {
    let Some(kcat) = crate::serve::client("kcat", crate::serve::which("kcat")) else { return };
    let Some(moto_python) = python_with_moto() else { return };
    let moto = Moto::start(&moto_python);
    moto.create_bucket(BUCKET);
    let store = moto.store(BUCKET);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    let (disk_a, disk_b) = (tempfile::tempdir().expect("a"), tempfile::tempdir().expect("b"));
    create_offline(disk_a.path(), "fenced", SMALL_TIERED);
    let extra = tiered_overrides(&moto, 50, &[]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let start = |dir: &Path| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_seglog"));
        command.envs(MOTO_CREDENTIALS);
        Broker::spawn(command, dir, "127.0.0.1:0", &extra)
    };
    let mut first = start(disk_a.path());
    kcat_produce_batches(&kcat, &first.addr, "fenced", 0, 4);
    wait_for_manifest(&store, &runtime, "the first broker's upload", |m| {
        m.writer_epoch == 1 && !m.segments.is_empty()
    });
    // The second process, on an empty disk, re-creates the topic from the bucket and takes
    // the partition.
    let second = start(disk_b.path());
    wait_for_manifest(&store, &runtime, "the second broker's acquire", |m| m.writer_epoch == 2);
    kcat_produce_batches(&kcat, &first.addr, "fenced", 400, 4);
    let said = first.stderr_until("this broker stops tiering it", Duration::from_mins(1));
    assert!(said.last().is_some_and(|line| line.contains("fenced")), "{said:#?}");
    let at_fence = the_manifest(&store, &runtime).expect("manifest");
    kcat_produce_batches(&kcat, &second.addr, "fenced", 800, 4);
    let later = wait_for_manifest(&store, &runtime, "the second broker's commits", |m| {
        m.manifest_version > at_fence.manifest_version
    });
    assert_eq!((at_fence.writer_epoch, later.writer_epoch), (2, 2), "only the second commits");
    assert!(first.terminate().success());
    assert!(second.terminate().success());
}

/// The value of `metric` (a line `name value` or `name{labels} value`) in `/metrics` at `addr`,
/// summed over its label sets.
fn scrape(addr: &str, metric: &str) -> f64 {
    use std::io::{Read, Write};
    let mut http = std::net::TcpStream::connect(addr).expect("metrics listener");
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("get");
    let mut text = String::new();
    http.read_to_string(&mut text).expect("read");
    text.lines()
        .filter(|line| line.strip_prefix(metric).is_some_and(|rest| rest.starts_with([' ', '{'])))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn with_the_bucket_down_local_disk_keeps_every_segment_and_a_metric_says_why() {
    let Some(kcat) = crate::serve::client("kcat", crate::serve::which("kcat")) else { return };
    let Some(moto_python) = python_with_moto() else { return };
    let moto = Moto::start(&moto_python);
    moto.create_bucket(BUCKET);
    let store = moto.store(BUCKET);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    let disk = tempfile::tempdir().expect("tempdir");
    create_offline(disk.path(), "outage", SMALL_TIERED);
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .to_string();
    let extra = tiered_overrides(&moto, 50, &[]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let mut command = Command::new(env!("CARGO_BIN_EXE_seglog"));
    command.envs(MOTO_CREDENTIALS);
    let broker = Broker::spawn_with_metrics(command, disk.path(), "127.0.0.1:0", &metrics, &extra);
    kcat_produce_batches(&kcat, &broker.addr, "outage", 0, 4);
    let partition_dir = disk.path().join("outage-0");
    let deadline = Instant::now() + Duration::from_mins(1);
    while local_bases(&partition_dir).first().is_none_or(|first| *first == 0) {
        assert!(Instant::now() < deadline, "local retention never followed the uploads");
        std::thread::sleep(Duration::from_millis(50));
    }
    let uploaded_before = the_manifest(&store, &runtime).expect("manifest").end_offset();
    drop(moto); // the bucket goes away

    let end = kcat_produce_batches(&kcat, &broker.addr, "outage", 400, 4);
    let errors_before = scrape(&metrics, "seglog_remote_errors_total");
    let deadline = Instant::now() + Duration::from_mins(1);
    while scrape(&metrics, "seglog_remote_errors_total") <= errors_before
        || scrape(&metrics, "seglog_remote_copy_lag_bytes") <= 4096.0
    {
        assert!(Instant::now() < deadline, "no metric says the uploads are failing");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nothing the bucket does not hold left the disk, and all of it is served.
    // (The bucket's end as the broker last committed it, -5 + 1: uploads could still land
    // between a read of the manifest and moto's stop.)
    let uploaded = list_offset(&broker.addr, "outage", -5) + 1;
    assert!(uploaded >= uploaded_before, "{uploaded} < {uploaded_before}");
    let first_local = local_bases(&partition_dir).first().copied().expect("segments");
    assert!(
        first_local <= uploaded,
        "{first_local} > {uploaded}: a segment went before its upload"
    );
    let records = kcat_consume_from(&kcat, &broker.addr, "outage", &first_local.to_string());
    let local: Vec<i64> = records.iter().map(|(offset, _, _)| *offset).collect();
    assert_eq!(local, (first_local..end as i64).collect::<Vec<_>>(), "every local offset served");
    assert!(broker.terminate().success());
}
