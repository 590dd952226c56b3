//! Tiered storage through the broker, on an in-memory bucket: closed segments go to the bucket,
//! local retention deletes only what is there, old offsets are fetched from it, ListOffsets
//! tells -2, -4 and -5 apart, and a failing bucket never stops local serving nor loses data.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use kafka_protocol::messages::CreateTopicsResponse;
use seglog_broker::object_store::memory::InMemory;
use seglog_broker::object_store::{ObjectStore, ObjectStoreExt, path::Path as ObjectPath};
use seglog_broker::{BrokerConfig, Server};
use seglog_format::Compression;
use seglog_remote::faults::FaultStore;
use seglog_remote::{Manifest, ObjectKind};

use crate::common::{Client, batch, records};
use crate::protocol::{create_topic_request, fetch_request, list_offsets_request, produce};

const TOPIC: &str = "tiered";

async fn start_tiered(dir: &Path, store: Arc<dyn ObjectStore>) -> Server {
    start_tiered_with(dir, store, &[]).await
}

/// [`start_tiered`] with more `server.properties` keys.
pub(crate) async fn start_tiered_with(
    dir: &Path,
    store: Arc<dyn ObjectStore>,
    extra: &[(&str, &str)],
) -> Server {
    let dir_text = dir.display().to_string();
    let properties = [
        ("listeners", "PLAINTEXT://127.0.0.1:0"),
        ("log.dirs", dir_text.as_str()),
        ("seglog.metrics.listener", ""),
        ("seglog.console.listener", ""),
        ("remote.log.storage.system.enable", "true"),
        ("seglog.remote.storage.bucket", "in-memory"),
        ("seglog.remote.storage.prefix", "it"),
        ("remote.log.manager.task.interval.ms", "20"),
        ("remote.log.manager.task.retry.backoff.ms", "10"),
        ("remote.log.manager.task.retry.backoff.max.ms", "50"),
        ("log.retention.check.interval.ms", "20"),
        ("log.cleaner.backoff.ms", "20"),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let config = BrokerConfig::from_properties(&properties).expect("test config is valid");
    Server::start_with_remote_store(config, store).await.expect("broker starts")
}

/// Creates the tiered topic: 4 KiB segments, one segment's worth kept locally.
async fn create_tiered_topic(client: &mut Client) {
    let configs = [
        ("remote.storage.enable", "true"),
        ("segment.bytes", "4096"),
        ("local.retention.bytes", "4096"),
    ];
    create_with(client, &configs).await;
}

/// Creates the topic with `configs`, which must succeed.
async fn create_with(client: &mut Client, configs: &[(&str, &str)]) {
    let created: CreateTopicsResponse =
        client.send(&create_topic_request(TOPIC, 1, configs), 7).await;
    assert_eq!(created.topics[0].error_code, 0, "{:?}", created.topics[0].error_message);
}

/// Produces `batches` batches of 10 records of about 100 bytes; returns every value by offset.
async fn produce_values(client: &mut Client, batches: usize) -> Vec<(i64, String)> {
    let mut expected = Vec::new();
    for batch_idx in 0..batches {
        let values: Vec<String> =
            (0..10).map(|i| format!("value-{batch_idx:03}-{i}-{}", "x".repeat(90))).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        let codec = [Compression::None, Compression::Gzip, Compression::Zstd][batch_idx % 3];
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX));
        let base = produce(client, TOPIC, batch(codec, &refs, now_ms)).await;
        expected.extend(values.into_iter().enumerate().map(|(i, v)| (base + i as i64, v)));
    }
    expected
}

async fn list_offset(client: &mut Client, timestamp: i64) -> i64 {
    let response = client.send(&list_offsets_request(TOPIC, timestamp), 9).await;
    let partition = &response.topics[0].partitions[0];
    assert_eq!(partition.error_code, 0, "ListOffsets {timestamp}");
    partition.offset
}

/// How long the tiering task may take to show an effect.
const WITHIN: Duration = Duration::from_secs(30);

/// Polls ListOffsets -4 every 20 ms until the first local offset is above `above` (the tiering
/// task and local retention run on their own clocks; there is nothing to wait on but their
/// effects), failing after [`WITHIN`].
async fn wait_for_local_start_above(client: &mut Client, above: i64) -> i64 {
    let deadline = Instant::now() + WITHIN;
    loop {
        let earliest_local = list_offset(client, -4).await;
        if earliest_local > above {
            return earliest_local;
        }
        assert!(Instant::now() < deadline, "the first local offset stayed at {earliest_local}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every record from `offset` on, fetched a partition-max-bytes at a time.
async fn fetch_all(client: &mut Client, from: i64, end: i64) -> Vec<(i64, String)> {
    let mut fetched: Vec<(i64, String)> = Vec::new();
    let mut next = from;
    let deadline = Instant::now() + WITHIN;
    while next < end {
        assert!(Instant::now() < deadline, "the fetches stopped at offset {next}");
        let response = client.send(&fetch_request(TOPIC, 0, next), 12).await;
        let partition = &response.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0, "fetch at {next}");
        let bytes = partition.records.clone().unwrap_or_default();
        let got = records(&bytes);
        if got.is_empty() {
            continue; // a remote read that ran past remote.fetch.max.wait.ms: ask again
        }
        next = got.last().map_or(next, |(offset, _)| offset + 1);
        fetched.extend(got.into_iter().filter(|(offset, _)| *offset >= from));
    }
    fetched
}

/// The manifest in the bucket; one must be there.
async fn manifest(store: &dyn ObjectStore) -> Manifest {
    try_manifest(store).await.expect("a manifest")
}

/// The manifest in the bucket, or `None` before the first upload wrote one.
async fn try_manifest(store: &dyn ObjectStore) -> Option<Manifest> {
    let keys: Vec<ObjectPath> = store
        .list(Some(&ObjectPath::from("it")))
        .map(|meta| meta.expect("list").location)
        .collect()
        .await;
    let key = keys.iter().find(|key| key.as_ref().ends_with("/manifest.json"))?;
    let bytes: Bytes = store.get(key).await.expect("get").bytes().await.expect("body");
    Some(Manifest::parse(key.as_ref(), &bytes).expect("manifest parses"))
}

/// The `.log` objects in the bucket.
async fn log_objects(store: &dyn ObjectStore) -> usize {
    let suffix = format!(".{}", ObjectKind::Log.suffix());
    store
        .list(Some(&ObjectPath::from("it")))
        .filter(|meta| {
            let is_log = meta.as_ref().is_ok_and(|meta| meta.location.as_ref().ends_with(&suffix));
            async move { is_log }
        })
        .count()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_segments_go_to_the_bucket_and_old_offsets_are_fetched_from_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let server = start_tiered(dir.path(), Arc::clone(&store)).await;
    let mut client = Client::connect(&server).await;
    create_tiered_topic(&mut client).await;
    let expected = produce_values(&mut client, 40).await;
    let log_end = expected.len() as i64;

    wait_for_local_start_above(&mut client, log_end / 2).await;
    let earliest = list_offset(&mut client, -2).await;
    let earliest_local = list_offset(&mut client, -4).await;
    let latest_tiered = list_offset(&mut client, -5).await;
    assert_eq!(earliest, 0, "the log starts in the bucket");
    assert!(earliest_local > 0 && earliest_local < log_end, "{earliest_local}");
    assert!(latest_tiered >= earliest_local - 1, "{latest_tiered} < {earliest_local} - 1");
    assert!(latest_tiered < log_end, "the active segment is never uploaded");
    assert_eq!(list_offset(&mut client, 0).await, 0, "by timestamp: the bucket's first record");

    let remote = manifest(store.as_ref()).await;
    assert_eq!(remote.log_start_offset, 0);
    assert!(remote.end_offset() > latest_tiered, "the manifest holds -5's offset");
    assert_eq!(log_objects(store.as_ref()).await, remote.segments.len(), "no orphan .log");

    let fetched = fetch_all(&mut client, 0, log_end).await;
    assert_eq!(fetched.len(), expected.len(), "every record once");
    assert_eq!(fetched, expected, "every record from the bucket and the disk, in order");
    let middle = fetch_all(&mut client, 15, log_end).await;
    assert_eq!(middle.first().map(|(offset, _)| *offset), Some(15), "a fetch inside a batch");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_bucket_keeps_local_data_and_serving_until_it_heals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let faults = Arc::new(FaultStore::new(Arc::new(InMemory::new()), 7, 0));
    let store: Arc<dyn ObjectStore> = Arc::clone(&faults) as _;
    let server = start_tiered(dir.path(), Arc::clone(&store)).await;
    faults.set_percent(100); // after the start's probe: every request gets 503 SlowDown
    let mut client = Client::connect(&server).await;
    create_tiered_topic(&mut client).await;
    let expected = produce_values(&mut client, 30).await;
    let log_end = expected.len() as i64;
    let deadline = Instant::now() + WITHIN;
    while faults.counts().failed < 5 {
        assert!(Instant::now() < deadline, "tiering rounds do not reach the bucket");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(list_offset(&mut client, -4).await, 0, "nothing left local disk");
    assert_eq!(fetch_all(&mut client, 0, log_end).await, expected, "local serving goes on");
    let more = produce_values(&mut client, 5).await;
    assert_eq!(more.first().map(|(offset, _)| *offset), Some(log_end), "produce goes on");

    faults.set_percent(0);
    wait_for_local_start_above(&mut client, 0).await;
    let mut all = expected;
    all.extend(more);
    let fetched = fetch_all(&mut client, 0, all.len() as i64).await;
    assert_eq!(fetched, all, "nothing lost or doubled across the outage");
    let remote = manifest(store.as_ref()).await;
    assert_eq!(log_objects(store.as_ref()).await, remote.segments.len(), "orphans collected");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_disk_with_the_same_bucket_serves_every_remote_offset() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let first_disk = tempfile::tempdir().expect("tempdir");
    let server = start_tiered(first_disk.path(), Arc::clone(&store)).await;
    let mut client = Client::connect(&server).await;
    create_tiered_topic(&mut client).await;
    let expected = produce_values(&mut client, 40).await;
    wait_for_local_start_above(&mut client, expected.len() as i64 / 2).await;
    let topic_id = server.broker().manager().topic_id(TOPIC).expect("topic id");
    server.shutdown().await.expect("clean shutdown");
    drop(first_disk); // the disk is lost

    let remote = manifest(store.as_ref()).await;
    let remote_end = remote.end_offset();
    assert!(remote_end > 0, "something was tiered");
    let empty_disk = tempfile::tempdir().expect("tempdir");
    let server = start_tiered(empty_disk.path(), Arc::clone(&store)).await;
    assert_eq!(
        server.broker().manager().topic_id(TOPIC),
        Some(topic_id),
        "re-created with its topic id"
    );
    let config = server.broker().manager().topic_config(TOPIC).expect("config");
    assert!(config.remote_storage_enable);
    assert_eq!(config.segment_bytes, 4096, "with its overrides");
    let mut client = Client::connect(&server).await;
    assert_eq!(list_offset(&mut client, -2).await, 0, "the log start is unchanged");
    assert_eq!(list_offset(&mut client, -4).await, remote_end, "the local log starts there");
    assert_eq!(list_offset(&mut client, -5).await, remote_end - 1);
    let fetched = fetch_all(&mut client, 0, remote_end).await;
    let remote_part: Vec<(i64, String)> =
        expected.iter().filter(|(offset, _)| *offset < remote_end).cloned().collect();
    assert_eq!(fetched, remote_part, "every remote offset, from the bucket alone");
    let more = produce_values(&mut client, 1).await;
    assert_eq!(more.first().map(|(offset, _)| *offset), Some(remote_end), "appends go on");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_broker_on_the_same_bucket_fences_the_first() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (disk_a, disk_b) = (tempfile::tempdir().expect("a"), tempfile::tempdir().expect("b"));
    let broker_a = start_tiered(disk_a.path(), Arc::clone(&store)).await;
    let mut client_a = Client::connect(&broker_a).await;
    create_tiered_topic(&mut client_a).await;
    produce_values(&mut client_a, 20).await;
    wait_for_local_start_above(&mut client_a, 0).await;
    assert_eq!(manifest(store.as_ref()).await.writer_epoch, 1);

    let broker_b = start_tiered(disk_b.path(), Arc::clone(&store)).await;
    let mut client_b = Client::connect(&broker_b).await;
    let deadline = Instant::now() + WITHIN;
    while manifest(store.as_ref()).await.writer_epoch < 2 {
        assert!(Instant::now() < deadline, "the second broker never took the partition");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The first broker's next commit finds the higher epoch.
    produce_values(&mut client_a, 20).await;
    let deadline = Instant::now() + WITHIN;
    while broker_a.broker().fenced_tiered_partitions().is_empty() {
        assert!(Instant::now() < deadline, "the first broker was never fenced");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let fenced_at = manifest(store.as_ref()).await;
    assert_eq!(fenced_at.writer_epoch, 2, "the fenced broker wrote nothing after");
    // The second keeps committing.
    let start_b = list_offset(&mut client_b, -4).await;
    produce_values(&mut client_b, 20).await;
    wait_for_local_start_above(&mut client_b, start_b).await;
    let later = manifest(store.as_ref()).await;
    assert!(later.manifest_version > fenced_at.manifest_version, "broker b committed");
    assert_eq!(later.writer_epoch, 2);
    assert!(broker_b.broker().fenced_tiered_partitions().is_empty());
    let fenced = broker_a.broker().fenced_tiered_partitions();
    assert_eq!(fenced.len(), 1);
    assert_eq!((fenced[0].topic.as_str(), fenced[0].partition), (TOPIC, 0));
    broker_a.shutdown().await.expect("a shuts down");
    broker_b.shutdown().await.expect("b shuts down");
}

#[tokio::test]
async fn a_broker_without_remote_storage_refuses_a_tiered_topic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = crate::common::start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    let request = create_topic_request(TOPIC, 1, &[("remote.storage.enable", "true")]);
    let created: CreateTopicsResponse = client.send(&request, 7).await;
    assert_eq!(created.topics[0].error_code, 40, "INVALID_CONFIG");
    let message = created.topics[0].error_message.as_deref().map(ToString::to_string);
    assert_eq!(
        message.as_deref(),
        Some(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured \
             with remote log storage."
        )
    );
    assert!(server.broker().manager().topic_id(TOPIC).is_none(), "nothing created");
    server.shutdown().await.expect("clean shutdown");
}

/// One batch of keyed records (a `None` value is a tombstone).
fn keyed_batch(records: &[(String, Option<String>)]) -> Bytes {
    let mut builder = seglog_format::RecordBatchBuilder::new(Compression::None);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX));
    for (key, value) in records {
        builder
            .push(now_ms, Some(key.as_bytes()), value.as_ref().map(String::as_bytes), &[])
            .expect("record");
    }
    Bytes::from(builder.build().expect("batch"))
}

/// Every (offset, key, value) of fetched record sets.
fn keyed_records(bytes: &[u8]) -> Vec<(i64, String, Option<String>)> {
    let mut out = Vec::new();
    for batch in seglog_format::Batches::new(bytes) {
        let batch = batch.expect("batch").batch;
        for record in &batch.records(seglog_format::DecodeLimits::default()).expect("records") {
            let record = record.expect("record");
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            out.push((record.offset, text(record.key.unwrap_or_default()), record.value.map(text)));
        }
    }
    out
}

/// The key -> value view of records read in offset order (a tombstone removes its key).
fn view(records: &[(i64, String, Option<String>)]) -> std::collections::BTreeMap<String, String> {
    let mut view = std::collections::BTreeMap::new();
    for (_, key, value) in records {
        match value {
            Some(value) => view.insert(key.clone(), value.clone()),
            None => view.remove(key),
        };
    }
    view
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_topic_is_tiered_cleaned_and_read_back_from_the_bucket_alone() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let disk = tempfile::tempdir().expect("tempdir");
    let server = start_tiered(disk.path(), Arc::clone(&store)).await;
    let mut client = Client::connect(&server).await;
    let configs = [
        ("remote.storage.enable", "true"),
        ("cleanup.policy", "compact"),
        ("segment.bytes", "4096"),
        ("min.cleanable.dirty.ratio", "0.01"),
        ("file.delete.delay.ms", "100"),
    ];
    create_with(&mut client, &configs).await;
    // 40 rounds overwriting 20 keys; the last round deletes five of them.
    let mut produced = Vec::new();
    let mut produced_bytes = 0;
    for round in 0..40 {
        let records: Vec<(String, Option<String>)> = (0..20)
            .map(|key| {
                let value = (round < 39 || key >= 5)
                    .then(|| format!("round-{round}-key-{key}-{}", "v".repeat(80)));
                (format!("key-{key}"), value)
            })
            .collect();
        let bytes = keyed_batch(&records);
        produced_bytes += bytes.len();
        let base = produce(&mut client, TOPIC, bytes).await;
        produced.extend(records.into_iter().enumerate().map(|(i, (k, v))| (base + i as i64, k, v)));
    }
    let reference = view(&produced);
    assert_eq!(reference.len(), 15);
    let last_real_offset = produced.last().map_or(0, |(offset, _, _)| *offset);
    // Later records of other keys close the segments that hold the real ones.
    for filler in 0..30 {
        let records = vec![(format!("filler-{filler}"), Some("f".repeat(300)))];
        produce(&mut client, TOPIC, keyed_batch(&records)).await;
    }

    // The bucket ends up with the cleaned segments: fewer objects and bytes than produced.
    // A cleaning pass groups segments by their size before it, so the one-batch segments merge
    // only in a later pass, which needs new dirty segments: filler goes on until then.
    let deadline = Instant::now() + WITHIN;
    let mut more_filler = 30..;
    loop {
        let Some(remote) = try_manifest(store.as_ref()).await else {
            assert!(Instant::now() < deadline, "nothing was ever uploaded");
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        // The segments holding the keyed records (the filler's are never cleaned).
        let real: Vec<_> =
            remote.segments.iter().filter(|entry| entry.base_offset <= last_real_offset).collect();
        let remote_bytes: u64 = real.iter().map(|entry| entry.log_bytes).sum();
        let objects = real.len();
        // Each round's batch filled a segment of its own (40 uploads); later cleaning passes
        // merge the cleaned segments, and the bucket follows.
        let settled = remote.end_offset() > last_real_offset
            && log_objects(store.as_ref()).await == remote.segments.len()
            && (remote_bytes as usize) < produced_bytes / 2
            && objects < 20;
        if settled {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not cleaned and re-uploaded: {objects} segments of keyed records, {remote_bytes} of \
             {produced_bytes} bytes, end {}",
            remote.end_offset()
        );
        let filler = more_filler.next().unwrap_or_default();
        let records = vec![(format!("filler-{filler}"), Some("f".repeat(300)))];
        produce(&mut client, TOPIC, keyed_batch(&records)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.shutdown().await.expect("clean shutdown");
    drop(disk);

    // From the bucket alone: the same key -> value view as the records produced.
    let empty_disk = tempfile::tempdir().expect("tempdir");
    let server = start_tiered(empty_disk.path(), Arc::clone(&store)).await;
    let mut client = Client::connect(&server).await;
    let mut fetched = Vec::new();
    let mut next = 0;
    loop {
        let response = client.send(&fetch_request(TOPIC, 0, next), 12).await;
        let partition = &response.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0, "fetch at {next}");
        let bytes = partition.records.clone().unwrap_or_default();
        // A cleaned batch may hold no record (its header kept): go on after its last offset.
        let batches = seglog_format::Batches::new(&bytes).map(|batch| batch.expect("batch"));
        let Some(last) = batches.last() else { break };
        next = last.batch.last_offset() + 1;
        fetched.extend(keyed_records(&bytes));
    }
    let offsets: Vec<i64> = fetched.iter().map(|(offset, _, _)| *offset).collect();
    assert!(offsets.windows(2).all(|pair| pair[0] < pair[1]), "no offset twice, in order");
    let real: Vec<_> = fetched.into_iter().filter(|(_, key, _)| key.starts_with("key-")).collect();
    assert!(
        real.len() < produced.len() / 2,
        "{} of {} records: cleaned",
        real.len(),
        produced.len()
    );
    assert_eq!(view(&real), reference, "the cleaned bucket gives the same view");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_expires_remote_segments_manifest_first_and_moves_the_log_start() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let disk = tempfile::tempdir().expect("tempdir");
    let server = start_tiered(disk.path(), Arc::clone(&store)).await;
    let mut client = Client::connect(&server).await;
    let configs = [
        ("remote.storage.enable", "true"),
        ("segment.bytes", "4096"),
        ("local.retention.bytes", "4096"),
        ("retention.ms", "1800000"),
    ];
    create_with(&mut client, &configs).await;
    // Twenty batches an hour old (past retention.ms), then twenty new ones.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX));
    let values: Vec<String> = (0..10).map(|i| format!("{i}-{}", "x".repeat(150))).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    for _ in 0..20 {
        produce(&mut client, TOPIC, batch(Compression::None, &refs, now_ms - 3_600_000)).await;
    }
    let first_new = produce(&mut client, TOPIC, batch(Compression::None, &refs, now_ms)).await;
    for _ in 1..20 {
        produce(&mut client, TOPIC, batch(Compression::None, &refs, now_ms)).await;
    }
    let deadline = Instant::now() + WITHIN;
    let remote = loop {
        // The tiering task may not have uploaded anything yet: no manifest is not a failure.
        let remote = try_manifest(store.as_ref()).await;
        if let Some(remote) = remote.as_ref().filter(|remote| {
            remote.log_start_offset > 0
                && remote.segments.first().is_some_and(|s| s.max_timestamp_ms >= now_ms)
        }) {
            break remote.clone();
        }
        assert!(Instant::now() < deadline, "remote retention never ran: {remote:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(remote.log_start_offset <= first_new, "nothing new expired");
    // Only the manifest's segments are left in the bucket (checked by listing).
    let deadline = Instant::now() + WITHIN;
    while log_objects(store.as_ref()).await != manifest(store.as_ref()).await.segments.len() {
        assert!(Instant::now() < deadline, "expired objects stay in the bucket");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let log_start = list_offset(&mut client, -2).await;
    assert!(log_start >= remote.log_start_offset && log_start <= first_new, "{log_start}");
    let gone = client.send(&fetch_request(TOPIC, 0, 0), 12).await;
    assert_eq!(gone.responses[0].partitions[0].error_code, 1, "OFFSET_OUT_OF_RANGE below it");
    let kept = fetch_all(&mut client, first_new, first_new + 200).await;
    assert_eq!(kept.len(), 200, "every new record is still served");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_records_below_the_local_segments_expires_remote_segments() {
    use kafka_protocol::messages::DeleteRecordsRequest;
    use kafka_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let disk = tempfile::tempdir().expect("tempdir");
    let server = start_tiered(disk.path(), Arc::clone(&store)).await;
    let mut client = Client::connect(&server).await;
    create_tiered_topic(&mut client).await;
    let expected = produce_values(&mut client, 40).await;
    let log_end = expected.len() as i64;
    let local_start = wait_for_local_start_above(&mut client, 200).await;
    let before = manifest(store.as_ref()).await;
    assert!(before.segments.iter().any(|entry| entry.last_offset < 150), "{before:?}");
    let request = DeleteRecordsRequest::default().with_topics(vec![
        DeleteRecordsTopic::default().with_name(crate::protocol::name(TOPIC)).with_partitions(
            vec![DeleteRecordsPartition::default().with_partition_index(0).with_offset(150)],
        ),
    ]);
    let response = client.send(&request, 2).await;
    let deleted = &response.topics[0].partitions[0];
    assert_eq!((deleted.error_code, deleted.low_watermark), (0, 150));
    assert_eq!(list_offset(&mut client, -2).await, 150);
    assert!(list_offset(&mut client, -4).await >= local_start, "the local part is untouched");
    // The next round expires the remote segments wholly below it: manifest, then objects.
    let deadline = Instant::now() + WITHIN;
    loop {
        let remote = manifest(store.as_ref()).await;
        let objects = log_objects(store.as_ref()).await;
        if remote.log_start_offset == 150 && objects == remote.segments.len() {
            // Only the segments reaching 150 or later are named, and only their objects left.
            assert!(remote.segments.iter().all(|entry| entry.last_offset >= 150));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the remote log start stayed at {}",
            remote.log_start_offset
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let below = client.send(&fetch_request(TOPIC, 0, 149), 12).await;
    assert_eq!(below.responses[0].partitions[0].error_code, 1, "OFFSET_OUT_OF_RANGE");
    let kept: Vec<(i64, String)> =
        expected.into_iter().filter(|(offset, _)| *offset >= 150).collect();
    assert_eq!(fetch_all(&mut client, 150, log_end).await, kept);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_bucket_answers_a_fetch_empty_within_remote_fetch_max_wait_ms() {
    use seglog_remote::faults::Latency;
    let faults = Arc::new(FaultStore::new(Arc::new(InMemory::new()), 11, 0));
    let store: Arc<dyn ObjectStore> = Arc::clone(&faults) as _;
    let disk = tempfile::tempdir().expect("tempdir");
    let extra = [("remote.fetch.max.wait.ms", "100")];
    let server = start_tiered_with(disk.path(), Arc::clone(&store), &extra).await;
    let mut client = Client::connect(&server).await;
    create_tiered_topic(&mut client).await;
    let expected = produce_values(&mut client, 40).await;
    wait_for_local_start_above(&mut client, 0).await;
    // Every GET now takes 2 s: the remote read outlasts the wait, and the partition answers
    // without records and without an error; the consumer asks again.
    faults.set_latency(Some(Latency {
        first_byte: Duration::from_secs(2),
        bytes_per_second: 1 << 30,
    }));
    let started = Instant::now();
    let slow = client.send(&fetch_request(TOPIC, 0, 0), 12).await;
    let partition = &slow.responses[0].partitions[0];
    assert_eq!(partition.error_code, 0);
    assert!(records(&partition.records.clone().unwrap_or_default()).is_empty());
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}: not bounded", started.elapsed());
    faults.set_latency(None);
    let fetched = fetch_all(&mut client, 0, 10).await;
    assert_eq!(fetched[..10], expected[..10], "served once the bucket answers");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_tiered_topic_leaves_the_bucket_and_does_not_come_back() {
    use kafka_protocol::messages::DeleteTopicsRequest;
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let disk = tempfile::tempdir().expect("tempdir");
    let server = start_tiered(disk.path(), Arc::clone(&store)).await;
    let mut client = Client::connect(&server).await;
    create_tiered_topic(&mut client).await;
    produce_values(&mut client, 20).await;
    wait_for_local_start_above(&mut client, 0).await;
    assert!(log_objects(store.as_ref()).await > 0);
    let request = DeleteTopicsRequest::default()
        .with_topic_names(vec![crate::protocol::name(TOPIC)])
        .with_timeout_ms(10_000);
    let deleted = client.send(&request, 5).await;
    assert_eq!(deleted.responses[0].error_code, 0);
    let listed: Vec<ObjectPath> = store
        .list(Some(&ObjectPath::from("it")))
        .map(|meta| meta.expect("list").location)
        .collect()
        .await;
    assert!(
        !listed.iter().any(|key| key.as_ref().ends_with("/manifest.json")),
        "the manifest went with the answer: {listed:?}"
    );
    let deadline = Instant::now() + WITHIN;
    while log_objects(store.as_ref()).await > 0 {
        assert!(Instant::now() < deadline, "the deleted topic's objects stay");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown().await.expect("clean shutdown");
    let empty_disk = tempfile::tempdir().expect("tempdir");
    let server = start_tiered(empty_disk.path(), Arc::clone(&store)).await;
    assert_eq!(server.broker().manager().topic_id(TOPIC), None, "not re-created from the bucket");
    server.shutdown().await.expect("clean shutdown");
}
