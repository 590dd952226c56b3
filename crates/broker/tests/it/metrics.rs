//! `/metrics`: Prometheus text with the request, byte, partition and log-cleaner figures.

use seglog_format::Compression;

use crate::common::{Client, batch, start};
use crate::protocol::{create_topic_request, produce};

#[tokio::test]
async fn metrics_endpoint_serves_prometheus_text() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[("seglog.metrics.listener", "127.0.0.1:0")]).await;
    let mut client = Client::connect(&server).await;
    client.send(&create_topic_request("m", 1, &[]), 7).await;
    produce(&mut client, "m", batch(Compression::None, &["a", "b"], 1)).await;
    let addr = server.metrics_addr().expect("metrics served");
    let mut http = tokio::net::TcpStream::connect(addr).await.expect("connect");
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await.expect("write");
    let mut text = String::new();
    http.read_to_string(&mut text).await.expect("read");
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    for needle in [
        "seglog_requests_total{api=\"Produce\"}",
        "seglog_request_seconds",
        "seglog_log_end_offset{topic=\"m\",partition=\"0\"} 2",
        "seglog_log_size_bytes{topic=\"m\",partition=\"0\"}",
        "seglog_topic_partitions{topic=\"m\"} 1",
        "seglog_topic_log_end_offset_sum{topic=\"m\"} 2",
        "seglog_topic_log_size_bytes{topic=\"m\"}",
        "seglog_offline_log_dirs 0",
        "seglog_bytes_in_total",
        "seglog_produce_durable_seconds",
        // The log cleaner's gauges, under Kafka's names.
        "seglog_log_cleaner_max_dirty_percent",
        "seglog_log_cleaner_time_since_last_run_ms",
        "seglog_log_cleaner_recopy_percent",
        "seglog_log_cleaner_max_buffer_utilization_percent",
        "seglog_log_cleaner_max_clean_time_secs",
        "seglog_log_cleaner_max_compaction_delay_secs",
        "seglog_log_cleaner_uncleanable_partitions_count 0",
        "seglog_log_cleaner_uncleanable_bytes 0",
        "seglog_log_cleaner_dead_thread_count 0",
    ] {
        assert!(text.contains(needle), "missing {needle} in:\n{text}");
    }
    let mut http = tokio::net::TcpStream::connect(addr).await.expect("connect");
    http.write_all(b"GET / HTTP/1.1\r\n\r\n").await.expect("write");
    let mut text = String::new();
    http.read_to_string(&mut text).await.expect("read");
    assert!(text.starts_with("HTTP/1.1 404"), "{text}");
    server.shutdown().await.expect("clean shutdown");
}
