//! `--workload tiered`: tiered storage through the in-process broker over a simulated S3:
//! `object_store`'s `InMemory` behind `FaultStore`'s latency, 20 ms to the first byte and then
//! 100 MB/s per request (one S3 connection's usual figures; say so next to any result).
//!
//! - **Producer p99 with and without uploads**: the same paced produce (`--rate-mb-per-s`,
//!   default 50) to a topic without tiering, then to a tiered one whose segments upload while
//!   it runs.
//! - **Upload throughput**: a backlog of `--total-mib` written untiered, then tiering turned on:
//!   the time until all of it is in the bucket, next to the simulated bandwidth.
//! - **Cold remote reads**: the backlog's local copies deleted, a fresh reader fetches it all
//!   from offset 0: the first response's latency and the MB/s, next to the bandwidth.

#![expect(clippy::cast_precision_loss, reason = "figures for a table")]

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use hdrhistogram::Histogram;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, FetchRequest, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use seglog_broker::object_store::ObjectStore;
use seglog_broker::object_store::memory::InMemory;
use seglog_format::{Batches, Compression, RecordBatchBuilder};
use seglog_remote::faults::{FaultStore, Latency};
use seglog_storage::log::partition_log::TopicPartition;

use super::txn::Client;
use super::{BenchArgs, Row, broker_config, mb_per_s, nanos_since, run_dir, write_rows};

/// The simulated S3: first-byte latency and per-request bandwidth.
const S3: Latency =
    Latency { first_byte: Duration::from_millis(20), bytes_per_second: 100_000_000 };
/// Segments of the tiered topics.
const SEGMENT_BYTES: u32 = 16 << 20;

/// Runs the tiered workload.
pub(super) fn run(args: &BenchArgs) -> Result<()> {
    let (root, _cleanup) = run_dir(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let figures = runtime.block_on(measure(args, &root))?;
    report(args, &figures)
}

/// What the workload measured.
struct Figures {
    plain: Produced,
    tiered: Produced,
    upload_bytes: u64,
    upload_elapsed: Duration,
    cold_first_response: Duration,
    cold_bytes: u64,
    cold_elapsed: Duration,
}

/// One paced produce run.
pub(super) struct Produced {
    pub(super) bytes: u64,
    pub(super) elapsed: Duration,
    pub(super) latency: Histogram<u64>,
}

/// Creates `topic` with `partitions` partitions and `configs`.
pub(super) async fn create_topic(
    client: &mut Client,
    topic: &str,
    partitions: i32,
    configs: &[(&str, String)],
) -> Result<()> {
    let configs = configs
        .iter()
        .map(|(k, v)| {
            CreatableTopicConfig::default()
                .with_name(StrBytes::from_string((*k).to_owned()))
                .with_value(Some(StrBytes::from_string(v.clone())))
        })
        .collect();
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_configs(configs),
        ])
        .with_timeout_ms(30_000);
    let created = client.send(&request, 7).await?;
    if created.topics.first().is_none_or(|topic| topic.error_code != 0) {
        bail!("cannot create {topic}: {:?}", created.topics.first().map(|t| &t.error_message));
    }
    Ok(())
}

/// Produces `total_bytes` to partition 0 of `topic` in batches of `--batch-bytes`, acks=1,
/// paced at `rate_mb_per_s` (0: unpaced), timing each request.
pub(super) async fn produce(
    client: &mut Client,
    args: &BenchArgs,
    topic: &str,
    total_bytes: u64,
    rate_mb_per_s: f64,
) -> Result<Produced> {
    let value: Vec<u8> = (0..args.record_bytes).map(|i| (i * 31 % 251) as u8).collect();
    let records_per_batch = (args.batch_bytes / (args.record_bytes + 16)).max(1);
    let mut latency = Histogram::<u64>::new(3)?;
    let mut bytes = 0u64;
    let started = Instant::now();
    while bytes < total_bytes {
        if rate_mb_per_s > 0.0 {
            let due = started + Duration::from_secs_f64(bytes as f64 / (rate_mb_per_s * 1e6));
            tokio::time::sleep_until(due.into()).await;
        }
        let now_ms = i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_millis()),
        )
        .unwrap_or(0);
        let mut builder = RecordBatchBuilder::new(Compression::None);
        for _ in 0..records_per_batch {
            builder.push(now_ms, None, Some(&value), &[])?;
        }
        let batch = Bytes::from(builder.build()?);
        let request =
            ProduceRequest::default().with_acks(1).with_timeout_ms(30_000).with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(batch.clone())),
                    ]),
            ]);
        let begun = Instant::now();
        let response = client.send(&request, 9).await?;
        latency.record(nanos_since(begun))?;
        let code = response.responses.first().and_then(|t| t.partition_responses.first());
        anyhow::ensure!(code.is_some_and(|p| p.error_code == 0), "produce to {topic} failed");
        bytes += batch.len() as u64;
    }
    Ok(Produced { bytes, elapsed: started.elapsed(), latency })
}

/// Polls `done` every 10 ms for up to ten minutes.
async fn wait_until(what: &str, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + Duration::from_mins(10);
    while !done()? {
        if Instant::now() > deadline {
            bail!("{what} did not happen in ten minutes");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

async fn measure(args: &BenchArgs, root: &std::path::Path) -> Result<Figures> {
    let faults = Arc::new(FaultStore::new(Arc::new(InMemory::new()), 1, 0));
    let store: Arc<dyn ObjectStore> = Arc::clone(&faults) as _;
    let config = broker_config(
        args,
        root,
        &[
            ("remote.log.storage.system.enable", "true"),
            ("seglog.remote.storage.bucket", "simulated"),
            ("remote.log.manager.task.interval.ms", "100"),
            ("log.retention.check.interval.ms", "100"),
        ],
    )?;
    let server = seglog_broker::Server::start_with_remote_store(config, store).await?;
    faults.set_latency(Some(S3)); // after the start's probe
    let mut client = Client::connect(server.local_addr()).await?;
    let total_bytes = args.total_mib << 20;
    let rate = args.rate_mb_per_s_or(50.0);
    eprintln!(
        "seglog bench --workload tiered: {} MiB per phase, {} B records, {rate} MB/s paced \
         produce; simulated S3: {} ms to the first byte, {} MB/s per request",
        args.total_mib,
        args.record_bytes,
        S3.first_byte.as_millis(),
        S3.bytes_per_second / 1_000_000
    );
    let segment = ("segment.bytes", SEGMENT_BYTES.to_string());
    let tiered = ("remote.storage.enable", "true".to_owned());
    create_topic(&mut client, "plain", 1, std::slice::from_ref(&segment)).await?;
    let plain = produce(&mut client, args, "plain", total_bytes, rate).await?;
    create_topic(&mut client, "tiered", 1, &[segment.clone(), tiered.clone()]).await?;
    let tiered_run = produce(&mut client, args, "tiered", total_bytes, rate).await?;

    // Upload throughput: a backlog written untiered, then tiering turned on.
    create_topic(&mut client, "backlog", 1, std::slice::from_ref(&segment)).await?;
    produce(&mut client, args, "backlog", total_bytes, 0.0).await?;
    let manager = Arc::clone(server.broker().manager());
    let backlog = manager.get_log(&TopicPartition { topic: "backlog".into(), partition: 0 })?;
    let backlog_bytes = backlog.size_bytes()?;
    let overrides = BTreeMap::from([
        ("segment.bytes".to_owned(), SEGMENT_BYTES.to_string()),
        ("remote.storage.enable".to_owned(), "true".to_owned()),
    ]);
    let started = Instant::now();
    manager.set_topic_overrides("backlog", overrides.clone())?;
    let active_bytes = || -> Result<u64> {
        let bases = backlog.segment_base_offsets()?;
        let end = backlog.log_end_offset()?;
        Ok(if bases.last().is_some_and(|base| *base < end) { u64::from(SEGMENT_BYTES) } else { 0 })
    };
    wait_until("the backlog's upload", || {
        Ok(backlog.bytes_not_in_remote_storage()? <= active_bytes()?)
    })
    .await?;
    let upload_elapsed = started.elapsed();
    let upload_bytes = backlog_bytes - backlog.bytes_not_in_remote_storage()?;

    // Cold reads: the local copies go, a new reader fetches everything from offset 0.
    let mut local_only = overrides;
    local_only.insert("local.retention.bytes".to_owned(), "1".to_owned());
    manager.set_topic_overrides("backlog", local_only)?;
    let uploaded_end = backlog.highest_offset_in_remote_storage()? + 1;
    wait_until("local retention", || Ok(backlog.local_log_start_offset()? >= uploaded_end)).await?;
    let mut reader = Client::connect(server.local_addr()).await?;
    let (cold_first_response, cold_bytes, cold_elapsed) =
        read_all(&mut reader, uploaded_end).await?;
    drop((client, reader));
    server.shutdown().await?;
    Ok(Figures {
        plain,
        tiered: tiered_run,
        upload_bytes,
        upload_elapsed,
        cold_first_response,
        cold_bytes,
        cold_elapsed,
    })
}

/// Fetches `backlog` from offset 0 to `end` in 1 MiB responses: the first response's latency,
/// the bytes and the time.
async fn read_all(client: &mut Client, end: i64) -> Result<(Duration, u64, Duration)> {
    let started = Instant::now();
    let mut first = None;
    let mut bytes = 0u64;
    let mut next = 0i64;
    while next < end {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(1000)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_static_str("backlog")))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(0)
                            .with_fetch_offset(next)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]);
        let response = client.send(&request, 12).await?;
        let partition = response
            .responses
            .first()
            .and_then(|topic| topic.partitions.first())
            .context("an empty fetch response")?;
        anyhow::ensure!(partition.error_code == 0, "fetch at {next}: {}", partition.error_code);
        let records = partition.records.clone().unwrap_or_default();
        first.get_or_insert_with(|| started.elapsed());
        if let Some(last) = Batches::new(&records).filter_map(Result::ok).last() {
            next = last.batch.next_offset();
        }
        bytes += records.len() as u64;
    }
    Ok((first.unwrap_or_default(), bytes, started.elapsed()))
}

fn report(args: &BenchArgs, figures: &Figures) -> Result<()> {
    let p99_ms = |run: &Produced| run.latency.value_at_quantile(0.99) as f64 / 1e6;
    let simulated_mb_per_s = S3.bytes_per_second as f64 / 1e6;
    let upload = mb_per_s(figures.upload_bytes, figures.upload_elapsed);
    let cold = mb_per_s(figures.cold_bytes, figures.cold_elapsed);
    let rows = [
        Row {
            name: "produce, untiered topic".to_owned(),
            mb_per_s: mb_per_s(figures.plain.bytes, figures.plain.elapsed),
            records_per_s: 0.0,
            note: format!("p99 {:.2} ms", p99_ms(&figures.plain)),
        },
        Row {
            name: "produce, tiered topic uploading".to_owned(),
            mb_per_s: mb_per_s(figures.tiered.bytes, figures.tiered.elapsed),
            records_per_s: 0.0,
            note: format!("p99 {:.2} ms", p99_ms(&figures.tiered)),
        },
        Row {
            name: "upload of a backlog".to_owned(),
            mb_per_s: upload,
            records_per_s: 0.0,
            note: format!("{:.2} of the simulated bandwidth", upload / simulated_mb_per_s),
        },
        Row {
            name: "cold remote read from offset 0".to_owned(),
            mb_per_s: cold,
            records_per_s: 0.0,
            note: format!(
                "first response {:.1} ms; {:.2} of the simulated bandwidth",
                figures.cold_first_response.as_secs_f64() * 1e3,
                cold / simulated_mb_per_s
            ),
        },
    ];
    let mut out = std::io::stdout().lock();
    write_rows(&mut out, &rows)?;
    let p99_ratio = p99_ms(&figures.tiered) / p99_ms(&figures.plain).max(1e-9);
    writeln!(out, "producer p99 with uploads / without: {p99_ratio:.2}")?;
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "workload": "tiered",
            "simulated_s3": {"first_byte_ms": S3.first_byte.as_millis() as u64, "mb_per_s": simulated_mb_per_s},
            "produce_plain_p99_ms": p99_ms(&figures.plain),
            "produce_tiered_p99_ms": p99_ms(&figures.tiered),
            "ratio_p99_uploading_vs_plain": p99_ratio,
            "upload_mb_per_s": upload,
            "ratio_upload_vs_simulated_bandwidth": upload / simulated_mb_per_s,
            "cold_read_first_response_ms": figures.cold_first_response.as_secs_f64() * 1e3,
            "cold_read_mb_per_s": cold,
            "ratio_cold_read_vs_simulated_bandwidth": cold / simulated_mb_per_s,
        });
        std::fs::write(path, serde_json::to_vec_pretty(&json)?)?;
    }
    Ok(())
}
