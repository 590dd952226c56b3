//! Prometheus `/metrics` on its own port: request rate and latency per API, bytes in and out,
//! produce-to-durable latency, connections, and, refreshed at each scrape, every partition's
//! log end offset and size, the number of offline log directories, and the log cleaner's
//! figures.

#![expect(clippy::cast_precision_loss, reason = "Prometheus gauges are f64 by definition")]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::Broker;

/// The largest HTTP request head read from a scraper.
const HTTP_REQUEST_BYTES_MAX: usize = 8 << 10;

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process-wide recorder once (several brokers in one test process share it).
pub(crate) fn install() {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        match metrics::set_global_recorder(recorder) {
            Ok(()) => Some(handle),
            Err(error) => {
                tracing::warn!(%error, "a metrics recorder is already installed; /metrics is empty");
                None
            }
        }
    });
}

fn refresh_gauges(broker: &Broker) {
    let manager = broker.manager();
    for tp in manager.partitions() {
        let Ok(log) = manager.get_log(&tp) else { continue };
        let labels = [("topic", tp.topic.clone()), ("partition", tp.partition.to_string())];
        if let Ok(log_end) = log.log_end_offset() {
            metrics::gauge!("seglog_log_end_offset", &labels).set(log_end as f64);
        }
        if let Ok(size) = log.size_bytes() {
            metrics::gauge!("seglog_log_size_bytes", &labels).set(size as f64);
        }
    }
    metrics::gauge!("seglog_offline_log_dirs").set(manager.offline_dirs().len() as f64);
    // The log cleaner, under Kafka's metric names (kafka.log:type=LogCleaner and
    // LogCleanerManager).
    let cleaner = manager.cleaner_metrics();
    let files = broker.log_files().stats();
    for (name, value) in [
        ("seglog_log_cleaner_max_dirty_percent", cleaner.max_dirty_percent),
        ("seglog_log_cleaner_time_since_last_run_ms", cleaner.time_since_last_run_ms as f64),
        ("seglog_log_cleaner_recopy_percent", cleaner.recopy_percent),
        (
            "seglog_log_cleaner_max_buffer_utilization_percent",
            cleaner.max_buffer_utilization_percent,
        ),
        ("seglog_log_cleaner_max_clean_time_secs", cleaner.max_clean_time_secs),
        ("seglog_log_cleaner_max_compaction_delay_secs", cleaner.max_compaction_delay_secs),
        (
            "seglog_log_cleaner_uncleanable_partitions_count",
            cleaner.uncleanable_partitions_count as f64,
        ),
        ("seglog_log_cleaner_uncleanable_bytes", cleaner.uncleanable_bytes as f64),
        ("seglog_log_cleaner_failed_rounds", cleaner.failed_rounds as f64),
        ("seglog_log_cleaner_completed_rounds", cleaner.completed_rounds as f64),
        ("seglog_log_cleaner_bytes_read", cleaner.bytes_read as f64),
        ("seglog_log_cleaner_bytes_written", cleaner.bytes_written as f64),
        ("seglog_log_cleaner_dead_thread_count", cleaner.dead_thread_count as f64),
        // The descriptor budget of the log files (seglog.open.files.max).
        ("seglog_log_open_files", files.open_files as f64),
        ("seglog_log_open_files_max", broker.log_files().open_files_max() as f64),
        ("seglog_log_open_files_peak", files.open_files_peak as f64),
        ("seglog_log_file_handles", files.handles as f64),
        ("seglog_log_file_opens", files.opens as f64),
        ("seglog_log_file_evictions", files.evictions as f64),
        ("seglog_log_file_dirty_evictions", files.dirty_evictions as f64),
        ("seglog_log_file_emfile_retries", files.emfile_retries as f64),
    ] {
        metrics::gauge!(name).set(value);
    }
}

/// The text a scrape returns.
pub(crate) fn render(broker: &Broker) -> String {
    refresh_gauges(broker);
    match HANDLE.get() {
        Some(Some(handle)) => {
            handle.run_upkeep();
            handle.render()
        }
        _ => String::new(),
    }
}

/// Serves `GET /metrics` until shutdown; anything else gets 404.
pub(crate) async fn serve(
    broker: Arc<Broker>,
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.changed() => return,
        };
        let Ok((mut stream, _)) = accepted else { continue };
        let broker = Arc::clone(&broker);
        tokio::spawn(async move {
            let mut head = Vec::new();
            let mut chunk = [0u8; 1024];
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while !head.windows(4).any(|w| w == b"\r\n\r\n")
                    && head.len() < HTTP_REQUEST_BYTES_MAX
                {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(chunk.get(..n).unwrap_or_default()),
                    }
                }
            })
            .await;
            if read.is_err() {
                return;
            }
            let response = if head.starts_with(b"GET /metrics ")
                || head.starts_with(b"GET /metrics?")
            {
                let body =
                    tokio::task::spawn_blocking(move || render(&broker)).await.unwrap_or_default();
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_owned()
            };
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}
