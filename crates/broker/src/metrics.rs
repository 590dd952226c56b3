//! Prometheus `/metrics` on its own port: request rate and latency per API, bytes in and out,
//! produce-to-durable latency, connections, and, at each scrape, per-topic sums (partitions,
//! size, log end offsets), the log end offset and size of the largest partitions
//! (`seglog.metrics.partitions.max`), the number of offline log directories, the descriptor
//! budget, and the log cleaner's figures.

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

/// How often the recorder drains its histograms' samples into their summaries when nothing
/// scrapes: each sample (24 bytes) is kept until a drain, so without one a broker that nobody
/// scrapes grows by its request rate.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Drains the histograms every [`UPKEEP_INTERVAL`] until shutdown (the upkeep task
/// `PrometheusBuilder::build` would spawn; `build_recorder` leaves it to the caller).
pub(crate) async fn upkeep(mut stopped: watch::Receiver<bool>) {
    let mut ticks = tokio::time::interval(UPKEEP_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stopped.changed() => return,
        }
        if let Some(Some(handle)) = HANDLE.get() {
            handle.run_upkeep();
        }
    }
}

/// A per-partition gauge's value.
type PartitionGauge = fn(&PartitionFigures) -> u64;

/// One loaded partition's figures at a scrape.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PartitionFigures {
    topic: String,
    partition: i32,
    log_end_offset: i64,
    size_bytes: u64,
}

/// Per-topic sums, and per-partition lines for at most `partitions_max` partitions, the
/// largest first (`seglog.metrics.partitions.max`): rendered here rather than registered, so
/// that the recorder holds no gauge per partition and a scrape's size is bounded whatever the
/// partition count. `unloaded` counts, per topic, the partitions a lazy start has not loaded
/// yet (not loaded for a scrape; their figures are not in the sums).
fn partition_text(
    mut figures: Vec<PartitionFigures>,
    unloaded: &std::collections::BTreeMap<String, u64>,
    partitions_max: usize,
) -> String {
    use std::fmt::Write as _;
    let mut topics: std::collections::BTreeMap<&str, (u64, u64, u64)> =
        unloaded.iter().map(|(topic, n)| (topic.as_str(), (*n, 0, 0))).collect();
    for figure in &figures {
        let entry = topics.entry(figure.topic.as_str()).or_default();
        entry.0 += 1;
        entry.1 += figure.size_bytes;
        entry.2 += u64::try_from(figure.log_end_offset).unwrap_or(0);
    }
    let mut text = String::new();
    text.push_str("# TYPE seglog_topic_partitions gauge\n");
    for (topic, (n, _, _)) in &topics {
        let _ = writeln!(text, "seglog_topic_partitions{{topic=\"{topic}\"}} {n}");
    }
    text.push_str("# TYPE seglog_topic_unloaded_partitions gauge\n");
    for topic in topics.keys() {
        let n = unloaded.get(*topic).copied().unwrap_or(0);
        let _ = writeln!(text, "seglog_topic_unloaded_partitions{{topic=\"{topic}\"}} {n}");
    }
    text.push_str("# TYPE seglog_topic_log_size_bytes gauge\n");
    for (topic, (_, size, _)) in &topics {
        let _ = writeln!(text, "seglog_topic_log_size_bytes{{topic=\"{topic}\"}} {size}");
    }
    text.push_str("# TYPE seglog_topic_log_end_offset_sum gauge\n");
    for (topic, (_, _, end)) in &topics {
        let _ = writeln!(text, "seglog_topic_log_end_offset_sum{{topic=\"{topic}\"}} {end}");
    }
    // The largest partitions, then by name so that equal sizes keep their order.
    figures.sort_by(|a, b| {
        b.size_bytes
            .cmp(&a.size_bytes)
            .then_with(|| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)))
    });
    figures.truncate(partitions_max);
    figures.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    let gauges: [(&str, PartitionGauge); 2] = [
        ("seglog_log_end_offset", |f| u64::try_from(f.log_end_offset).unwrap_or(0)),
        ("seglog_log_size_bytes", |f| f.size_bytes),
    ];
    for (name, value) in gauges {
        if figures.is_empty() {
            break;
        }
        let _ = writeln!(text, "# TYPE {name} gauge");
        for f in &figures {
            let _ = writeln!(
                text,
                "{name}{{topic=\"{}\",partition=\"{}\"}} {}",
                f.topic,
                f.partition,
                value(f)
            );
        }
    }
    text
}

/// [`partition_text`] of the broker's partitions now, loading none.
fn partitions_now(broker: &Broker) -> String {
    let manager = broker.manager();
    let mut figures = Vec::new();
    let mut unloaded = std::collections::BTreeMap::new();
    for tp in manager.partitions() {
        let Ok(log) = manager.get_log(&tp) else { continue };
        if !log.is_loaded() {
            *unloaded.entry(tp.topic).or_insert(0) += 1;
            continue;
        }
        if let (Ok(log_end_offset), Ok(size_bytes)) = (log.log_end_offset(), log.size_bytes()) {
            figures.push(PartitionFigures {
                topic: tp.topic,
                partition: tp.partition,
                log_end_offset,
                size_bytes,
            });
        }
    }
    partition_text(figures, &unloaded, broker.config.metrics_partitions_max as usize)
}

fn refresh_gauges(broker: &Broker) {
    let manager = broker.manager();
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
        // KIP-227 fetch sessions held (max.incremental.fetch.session.cache.slots).
        ("seglog_fetch_sessions", broker.fetch_sessions().len() as f64),
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
            let mut text = handle.render();
            text.push_str(&partitions_now(broker));
            text
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

#[cfg(test)]
mod tests {
    use super::{PartitionFigures, partition_text};

    fn figure(
        topic: &str,
        partition: i32,
        log_end_offset: i64,
        size_bytes: u64,
    ) -> PartitionFigures {
        PartitionFigures { topic: topic.to_owned(), partition, log_end_offset, size_bytes }
    }

    #[test]
    fn topics_are_summed_and_only_the_largest_partitions_are_shown_one_by_one() {
        let figures = vec![figure("a", 0, 5, 100), figure("a", 1, 7, 300), figure("b", 0, 2, 200)];
        let unloaded = std::collections::BTreeMap::from([("a".to_owned(), 2), ("c".to_owned(), 4)]);
        let text = partition_text(figures, &unloaded, 2);
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                "seglog_topic_partitions{topic=\"a\"} 4",
                "seglog_topic_partitions{topic=\"b\"} 1",
                "seglog_topic_partitions{topic=\"c\"} 4",
                "seglog_topic_unloaded_partitions{topic=\"a\"} 2",
                "seglog_topic_unloaded_partitions{topic=\"b\"} 0",
                "seglog_topic_unloaded_partitions{topic=\"c\"} 4",
                "seglog_topic_log_size_bytes{topic=\"a\"} 400",
                "seglog_topic_log_size_bytes{topic=\"b\"} 200",
                "seglog_topic_log_size_bytes{topic=\"c\"} 0",
                "seglog_topic_log_end_offset_sum{topic=\"a\"} 12",
                "seglog_topic_log_end_offset_sum{topic=\"b\"} 2",
                "seglog_topic_log_end_offset_sum{topic=\"c\"} 0",
                "seglog_log_end_offset{topic=\"a\",partition=\"1\"} 7",
                "seglog_log_end_offset{topic=\"b\",partition=\"0\"} 2",
                "seglog_log_size_bytes{topic=\"a\",partition=\"1\"} 300",
                "seglog_log_size_bytes{topic=\"b\",partition=\"0\"} 200",
            ]
        );
        let none = partition_text(vec![figure("a", 0, 5, 100)], &unloaded, 0);
        assert!(!none.contains("seglog_log_end_offset"), "0 shows no partition: {none}");
        assert!(none.contains("seglog_topic_log_size_bytes{topic=\"a\"} 100"), "{none}");
    }
}
