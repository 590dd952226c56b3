//! `seglog bench --workload transactional`: produce through the broker, in-process on
//! 127.0.0.1 and over the wire protocol (the `kafka-protocol` codecs), with transactions of 100
//! and of 1,000 records next to the same produce without transactions (an idempotent producer,
//! Kafka's default), interleaved in one run and repeated, reported as ratios. One request is in
//! flight at a time, with one batch per partition: the transactional runs pay what a
//! transaction adds (AddPartitionsToTxn, EndTxn: the prepare record, the markers and the
//! completion record) on the same path.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, CreateTopicsRequest, EndTxnRequest, InitProducerIdRequest,
    ProduceRequest, ProducerId, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use seglog_format::{Compression, RecordBatchBuilder};

use super::{BenchArgs, Row, broker_config, mb_per_s, run_dir, write_rows};
pub(super) use seglog_broker::wire::Client;

/// The runs, in the order they interleave: `None` is the plain producer.
const MODES: [Option<u64>; 3] = [None, Some(100), Some(1000)];
/// Each mode runs this many times.
const REPEATS: usize = 3;

/// One measured run.
struct Run {
    mode: Option<u64>,
    bytes: u64,
    records: u64,
    elapsed: Duration,
}

/// Runs the transactional workload.
pub(super) fn run(args: &BenchArgs) -> Result<()> {
    let (root, _cleanup) = run_dir(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let runs = runtime.block_on(measure(args, &root))?;
    report(args, &runs)
}

async fn measure(args: &BenchArgs, root: &std::path::Path) -> Result<Vec<Run>> {
    let config = broker_config(args, root, &[("transaction.state.log.num.partitions", "1")])?;
    let server = seglog_broker::Server::start(config).await?;
    let mut client = Client::connect(server.local_addr()).await?;
    let value: Vec<u8> = (0..args.record_bytes).map(|i| (i * 31 % 251) as u8).collect();
    let records_per_batch = (args.batch_bytes / (args.record_bytes + 16)).max(1);
    let total_bytes = args.total_mib << 20;
    eprintln!(
        "seglog bench --workload transactional: {} MiB per run, {} B records, \
         {records_per_batch} records per batch, {} partitions, {}, each mode {REPEATS} times",
        args.total_mib, args.record_bytes, args.partitions, args.durability
    );
    let mut runs = Vec::new();
    let mut n = 0;
    for _ in 0..REPEATS {
        for mode in MODES {
            n += 1;
            let topic = format!("bench-{n}");
            let request = CreateTopicsRequest::default()
                .with_topics(vec![
                    CreatableTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.clone())))
                        .with_num_partitions(args.partitions)
                        .with_replication_factor(1),
                ])
                .with_timeout_ms(30_000);
            let created = client.send(&request, 7).await?;
            if created.topics.first().is_none_or(|topic| topic.error_code != 0) {
                bail!("cannot create {topic}");
            }
            let shape = Shape { topic, records_per_batch, total_bytes };
            runs.push(produce(&mut client, args, &shape, &value, mode, n).await?);
        }
    }
    drop(client);
    server.shutdown().await?;
    Ok(runs)
}

/// What one run writes.
struct Shape {
    topic: String,
    records_per_batch: usize,
    total_bytes: u64,
}

/// One run: `total_bytes` of records to `topic`, plain (`mode` `None`) or in transactions of
/// `mode` records.
async fn produce(
    client: &mut Client,
    args: &BenchArgs,
    shape: &Shape,
    value: &[u8],
    mode: Option<u64>,
    n: usize,
) -> Result<Run> {
    let transactional_id =
        mode.map(|_| TransactionalId(StrBytes::from_string(format!("bench-{n}"))));
    let init = InitProducerIdRequest::default()
        .with_transactional_id(transactional_id.clone())
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let granted = client.send(&init, 4).await?;
    anyhow::ensure!(granted.error_code == 0, "InitProducerId: error {}", granted.error_code);
    let (producer_id, epoch) = (granted.producer_id.0, granted.producer_epoch);
    let partitions: Vec<i32> = (0..args.partitions).collect();
    let mut sequences = vec![0i32; partitions.len()];
    let topic_name = TopicName(StrBytes::from_string(shape.topic.clone()));
    let record_bytes = value.len() as u64;
    let mut bytes = 0u64;
    let mut records = 0u64;
    let mut in_txn = 0u64;
    let started = Instant::now();
    while bytes < shape.total_bytes {
        if let (Some(id), 0) = (&transactional_id, in_txn) {
            let add = AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(id.clone())
                .with_v3_and_below_producer_id(ProducerId(producer_id))
                .with_v3_and_below_producer_epoch(epoch)
                .with_v3_and_below_topics(vec![
                    AddPartitionsToTxnTopic::default()
                        .with_name(topic_name.clone())
                        .with_partitions(partitions.clone()),
                ]);
            let added = client.send(&add, 3).await?;
            let failed = added.results_by_topic_v3_and_below.iter().any(|topic| {
                topic.results_by_partition.iter().any(|p| p.partition_error_code != 0)
            });
            anyhow::ensure!(!failed, "AddPartitionsToTxn failed");
        }
        // One batch per partition, cut short at the transaction's end.
        let left_in_txn = mode.map_or(u64::MAX, |size| size - in_txn);
        let per_partition = (shape.records_per_batch as u64)
            .min(left_in_txn.div_ceil(partitions.len() as u64).max(1));
        let mut data = Vec::new();
        for (idx, partition) in partitions.iter().enumerate() {
            let mut builder = RecordBatchBuilder::new(Compression::None)
                .producer(producer_id, epoch, sequences[idx])
                .transactional(mode.is_some());
            let now_ms = i64::try_from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |elapsed| elapsed.as_millis()),
            )
            .unwrap_or(0);
            for _ in 0..per_partition {
                builder.push(now_ms, None, Some(value), &[])?;
            }
            sequences[idx] += i32::try_from(per_partition).unwrap_or(0);
            data.push(
                PartitionProduceData::default()
                    .with_index(*partition)
                    .with_records(Some(Bytes::from(builder.build()?))),
            );
        }
        let request = ProduceRequest::default()
            .with_transactional_id(transactional_id.clone())
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![
                TopicProduceData::default().with_name(topic_name.clone()).with_partition_data(data),
            ]);
        let response = client.send(&request, 9).await?;
        for partition in response.responses.iter().flat_map(|topic| &topic.partition_responses) {
            anyhow::ensure!(partition.error_code == 0, "Produce: error {}", partition.error_code);
        }
        let written = per_partition * partitions.len() as u64;
        records += written;
        bytes += written * record_bytes;
        in_txn += written;
        if let (Some(id), Some(size)) = (&transactional_id, mode)
            && (in_txn >= size || bytes >= shape.total_bytes)
        {
            let end = EndTxnRequest::default()
                .with_transactional_id(id.clone())
                .with_producer_id(ProducerId(producer_id))
                .with_producer_epoch(epoch)
                .with_committed(true);
            let ended = client.send(&end, 3).await?;
            anyhow::ensure!(ended.error_code == 0, "EndTxn: error {}", ended.error_code);
            in_txn = 0;
        }
    }
    Ok(Run { mode, bytes, records, elapsed: started.elapsed() })
}

fn name(mode: Option<u64>) -> String {
    mode.map_or_else(
        || "produce, no transaction".to_owned(),
        |size| format!("transactions of {size}"),
    )
}

#[expect(clippy::cast_precision_loss, reason = "throughput figures")]
fn report(args: &BenchArgs, runs: &[Run]) -> Result<()> {
    let mut rows = Vec::new();
    let mut mean: BTreeMap<Option<u64>, Vec<f64>> = BTreeMap::new();
    for run in runs {
        let rate = mb_per_s(run.bytes, run.elapsed);
        mean.entry(run.mode).or_default().push(rate);
        rows.push(Row {
            name: name(run.mode),
            mb_per_s: rate,
            records_per_s: run.records as f64 / run.elapsed.as_secs_f64().max(1e-9),
            note: format!("{} records", run.records),
        });
    }
    let average = |mode: Option<u64>| {
        let rates = mean.get(&mode).cloned().unwrap_or_default();
        rates.iter().sum::<f64>() / rates.len().max(1) as f64
    };
    let plain = average(None);
    let ratio_100 = average(Some(100)) / plain.max(1e-9);
    let ratio_1000 = average(Some(1000)) / plain.max(1e-9);
    let mut out = std::io::stdout().lock();
    write_rows(&mut out, &rows)?;
    writeln!(
        out,
        "mean MB/s: plain {plain:.1}, transactions of 100 {:.1} ({ratio_100:.2}x), of 1000 {:.1} \
         ({ratio_1000:.2}x; target >= 0.8)",
        average(Some(100)),
        average(Some(1000))
    )?;
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "workload": "transactional",
            "runs": runs.iter().map(|run| serde_json::json!({
                "mode": name(run.mode),
                "mb_per_s": mb_per_s(run.bytes, run.elapsed),
                "records": run.records,
                "seconds": run.elapsed.as_secs_f64(),
            })).collect::<Vec<_>>(),
            "ratio_txn100_vs_plain": ratio_100,
            "ratio_txn1000_vs_plain": ratio_1000,
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
