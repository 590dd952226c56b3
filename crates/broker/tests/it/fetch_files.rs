//! Fetch responses whose records go from the segment files to the socket (`sendfile`): the
//! same records as a read into memory, at every Fetch version, mixed with partitions read into
//! memory in one response, and counted by `seglog_fetch_file_bytes_total`.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, BrokerId, CreateTopicsResponse, FetchRequest};
use seglog_format::Compression;

use crate::common::{Client, batch, records, start};
use crate::protocol::{create_topic_request, name, produce_request};

/// The value of a counter in the broker's `/metrics` text (0 when it is absent).
async fn counter(server: &seglog_broker::Server, metric: &str) -> u64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.metrics_addr().expect("metrics served");
    let mut http = tokio::net::TcpStream::connect(addr).await.expect("connect");
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await.expect("write");
    let mut text = String::new();
    http.read_to_string(&mut text).await.expect("read");
    text.lines()
        .filter_map(|line| line.strip_prefix(metric)?.strip_prefix(' '))
        .find_map(|value| value.trim().parse::<f64>().ok())
        .map_or(0, |value| value as u64)
}

fn values(prefix: &str, count: usize, bytes: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i:04}{}", "x".repeat(bytes))).collect()
}

fn refs(values: &[String]) -> Vec<&str> {
    values.iter().map(String::as_str).collect()
}

#[tokio::test]
async fn records_sent_from_files_match_at_every_fetch_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[("seglog.metrics.listener", "127.0.0.1:0")]).await;
    let mut client = Client::connect(&server).await;
    let created: CreateTopicsResponse =
        client.send(&create_topic_request("files", 3, &[]), 7).await;
    let topic_id = created.topics[0].topic_id;
    // Partition 0: one 48 KB batch and partition 2 two 24 KB batches (each slice is above the
    // 16 KiB the broker sends from files), partition 1 a small batch read into memory.
    let large = values("a", 48, 1000);
    let small = values("b", 3, 10);
    let (half_1, half_2) = (values("c", 24, 1000), values("d", 24, 1000));
    let mut expected = vec![Vec::new(); 3];
    for (partition, values) in [(0, &large), (1, &small), (2, &half_1), (2, &half_2)] {
        let request =
            produce_request("files", partition, batch(Compression::None, &refs(values), 1), -1);
        let response = client.send(&request, 9).await;
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
        let list: &mut Vec<(i64, String)> = &mut expected[partition as usize];
        for value in values {
            list.push((i64::try_from(list.len()).expect("small"), value.clone()));
        }
    }
    let (min, max) = seglog_broker::supported_versions(ApiKey::Fetch).expect("fetch served");
    let before = counter(&server, "seglog_fetch_file_bytes_total").await;
    let mut file_bytes = 0;
    for version in min..=max {
        let mut request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(50 << 20)
            .with_isolation_level(i8::from(version % 2 == 1 && version >= 4));
        let mut topic = FetchTopic::default().with_partitions(
            (0..3)
                .map(|partition| {
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(0)
                        .with_partition_max_bytes(1 << 20)
                })
                .collect(),
        );
        if version >= 13 {
            topic.topic_id = topic_id;
        } else {
            topic.topic = name("files");
        }
        request.topics.push(topic);
        let response = client.send(&request, version).await;
        assert_eq!(response.error_code, 0, "v{version}");
        let partitions = &response.responses[0].partitions;
        assert_eq!(partitions.len(), 3, "v{version}");
        for (partition, expected) in partitions.iter().zip(&expected) {
            assert_eq!(
                partition.error_code, 0,
                "v{version} partition {}",
                partition.partition_index
            );
            let bytes = partition.records.as_deref().unwrap_or_default();
            assert_eq!(
                records(bytes),
                *expected,
                "v{version} partition {}",
                partition.partition_index
            );
            assert_eq!(partition.high_watermark, i64::try_from(expected.len()).expect("small"));
            if partition.partition_index != 1 {
                file_bytes += bytes.len() as u64;
            }
        }
    }
    // Every large partition went out of its file: a broker that read them into memory adds
    // nothing to the counter.
    let sent = counter(&server, "seglog_fetch_file_bytes_total").await - before;
    assert!(sent >= file_bytes, "{sent} bytes sent from files, {file_bytes} expected");
    server.shutdown().await.expect("clean shutdown");
}
