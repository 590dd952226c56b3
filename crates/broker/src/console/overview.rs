//! The overview (the broker, its log directories, partition counts, live throughput) and the
//! health page (the cleaner, the last start's recovery, fsync latency, request rates).

use std::path::Path;

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use super::history::{ApiRate, ThroughputPoint};
use super::topics::PartitionRow;
use super::{ApiError, App, blocking};

/// What the last start found on disk, for the health page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Recovery {
    /// How long opening the log directories took (the partitions listed, the rest lazy).
    pub(crate) open_ms: u64,
    /// Partitions listed at the open.
    pub(crate) partitions: usize,
    /// Log directories closed cleanly before this start.
    pub(crate) clean_dirs: usize,
    /// Log directories not closed cleanly (their logs recover from their recovery points).
    pub(crate) unclean_dirs: usize,
    /// Whether the background load has finished.
    pub(crate) background_done: bool,
    /// Partitions loaded by the background load (the rest were loaded by first use).
    pub(crate) loaded: usize,
    /// Partitions that failed to load.
    pub(crate) failed: usize,
    /// Segments validated and re-indexed (recovery scanned them).
    pub(crate) segments_recovered: usize,
    /// Bytes cut from torn or corrupt tails.
    pub(crate) bytes_truncated: u64,
    /// How long the background load took.
    pub(crate) background_ms: u64,
}

impl Recovery {
    /// What the open of the log directories found, `elapsed` after it began.
    pub(crate) fn at_open(
        elapsed: std::time::Duration,
        manager: &seglog_storage::manager::LogManager,
        report: &seglog_storage::manager::OpenReport,
    ) -> Self {
        Self {
            open_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            partitions: manager.partitions().len(),
            clean_dirs: report.clean_dirs.len(),
            unclean_dirs: manager.log_dirs().len().saturating_sub(report.clean_dirs.len()),
            segments_recovered: report.partitions.values().map(|r| r.segments_recovered).sum(),
            bytes_truncated: report.partitions.values().map(|r| r.bytes_truncated).sum(),
            ..Self::default()
        }
    }
}

#[derive(Serialize)]
pub(super) struct LogDirView {
    path: String,
    online: bool,
    /// Bytes of the loaded partitions' logs in it.
    log_bytes: u64,
    total_bytes: Option<u64>,
    usable_bytes: Option<u64>,
}

#[derive(Serialize)]
pub(super) struct Overview {
    cluster_id: String,
    node_id: i32,
    version: &'static str,
    uptime_ms: u64,
    listeners: Vec<String>,
    actions_enabled: bool,
    tiered_storage: bool,
    log_dirs: Vec<LogDirView>,
    offline_log_dirs: usize,
    topics: usize,
    partitions: usize,
    partitions_unloaded: usize,
    partitions_offline: usize,
    log_bytes: u64,
    throughput: Option<ThroughputPoint>,
}

fn log_dirs(app: &App, rows: &[PartitionRow]) -> Vec<LogDirView> {
    let manager = app.broker.manager();
    let offline = manager.offline_dirs();
    let fs = app.broker.log_files();
    manager
        .log_dirs()
        .into_iter()
        .map(|dir| {
            let online = !offline.contains(&dir);
            let space =
                if online { seglog_storage::io::Fs::space(fs.as_ref(), &dir).ok() } else { None };
            let log_bytes = rows
                .iter()
                .filter(|row| {
                    row.log_dir.as_deref().is_some_and(|d| Path::new(d).starts_with(&dir))
                })
                .filter_map(|row| row.size_bytes)
                .sum();
            LogDirView {
                path: dir.display().to_string(),
                online,
                log_bytes,
                total_bytes: space.map(|s| s.total_bytes),
                usable_bytes: space.map(|s| s.usable_bytes),
            }
        })
        .collect()
}

/// `GET /api/v1/overview`.
pub(super) async fn overview(State(app): State<App>) -> Result<Json<Overview>, ApiError> {
    let work = app.clone();
    let rows = blocking(move || Ok(work.rows.get(&work.broker))).await?;
    let broker = &app.broker;
    let mut topics: Vec<&str> = rows.iter().map(|row| row.topic.as_str()).collect();
    topics.dedup();
    Ok(Json(Overview {
        cluster_id: broker.cluster_id.clone(),
        node_id: broker.config.node_id,
        version: env!("CARGO_PKG_VERSION"),
        uptime_ms: u64::try_from(app.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        listeners: broker
            .config
            .listeners
            .iter()
            .zip(&broker.advertised)
            .map(|(listener, (host, port))| format!("{}://{host}:{port}", listener.name))
            .collect(),
        actions_enabled: broker.config.console.actions_enable,
        tiered_storage: broker.tiering.is_some(),
        log_dirs: log_dirs(&app, &rows),
        offline_log_dirs: broker.manager().offline_dirs().len(),
        topics: topics.len(),
        partitions: rows.len(),
        partitions_unloaded: rows.iter().filter(|row| !row.loaded).count(),
        partitions_offline: rows.iter().filter(|row| row.offline).count(),
        log_bytes: rows.iter().filter_map(|row| row.size_bytes).sum(),
        throughput: app.history.latest(),
    }))
}

#[derive(Serialize)]
pub(super) struct Throughput {
    interval_ms: u64,
    points_max: usize,
    points: Vec<ThroughputPoint>,
}

/// `GET /api/v1/throughput`: the last hour's samples.
pub(super) async fn throughput(State(app): State<App>) -> Json<Throughput> {
    Json(Throughput {
        interval_ms: app.broker.config.console.sample_interval_ms,
        points_max: super::history::THROUGHPUT_POINTS_MAX,
        points: app.history.throughput(),
    })
}

#[derive(Serialize)]
struct CleanerPartition {
    topic: String,
    partition: i32,
    dirty_ratio: f64,
    first_dirty_offset: i64,
    state: String,
    uncleanable: Option<String>,
}

#[derive(Serialize)]
struct Cleaner {
    threads: u32,
    max_dirty_percent: f64,
    time_since_last_run_ms: i64,
    completed_rounds: u64,
    failed_rounds: u64,
    uncleanable_partitions: u64,
    uncleanable_bytes: u64,
    bytes_read: u64,
    bytes_written: u64,
    partitions: Vec<CleanerPartition>,
}

#[derive(Serialize)]
struct FsyncLatency {
    count: u64,
    p50_us: u64,
    p99_us: u64,
    p999_us: u64,
    max_us: u64,
}

#[derive(Serialize)]
struct OpenFiles {
    open: usize,
    max: usize,
    peak: usize,
    evictions: u64,
}

#[derive(Serialize)]
pub(super) struct Health {
    cleaner: Cleaner,
    recovery: Recovery,
    fsync_latency: FsyncLatency,
    open_files: OpenFiles,
    requests: Vec<ApiRate>,
    offline_log_dirs: Vec<String>,
    fenced_tiered_partitions: Vec<String>,
}

/// The compacted partitions the cleaner reports on, at most this many (the dirtiest first).
const CLEANER_PARTITIONS_MAX: usize = 200;

fn cleaner(app: &App) -> Cleaner {
    let manager = app.broker.manager();
    let metrics = manager.cleaner_metrics();
    let mut partitions = Vec::new();
    // Only compacted topics' partitions have a cleaner state: the others are not visited.
    let compacted: std::collections::BTreeSet<String> = manager
        .topics()
        .into_iter()
        .filter(|topic| manager.topic_config(topic).is_ok_and(|config| config.is_compact()))
        .collect();
    let partitions_of_compacted =
        manager.partitions().into_iter().filter(|tp| compacted.contains(&tp.topic));
    for tp in partitions_of_compacted {
        let Ok(log) = manager.get_log(&tp) else { continue };
        if !log.is_loaded() {
            continue;
        }
        let Ok(Some(state)) = manager.partition_cleaner_state(&tp) else { continue };
        partitions.push(CleanerPartition {
            topic: tp.topic,
            partition: tp.partition,
            dirty_ratio: state.dirty_ratio,
            first_dirty_offset: state.first_dirty_offset,
            state: match state.state {
                None => "idle".to_owned(),
                Some(seglog_storage::cleaner::CleaningState::InProgress) => "cleaning".to_owned(),
                Some(seglog_storage::cleaner::CleaningState::Aborted) => "aborted".to_owned(),
                Some(seglog_storage::cleaner::CleaningState::Paused(n)) => format!("paused ({n})"),
            },
            uncleanable: state.uncleanable,
        });
    }
    partitions.sort_by(|a, b| {
        b.uncleanable
            .is_some()
            .cmp(&a.uncleanable.is_some())
            .then(b.dirty_ratio.total_cmp(&a.dirty_ratio))
    });
    partitions.truncate(CLEANER_PARTITIONS_MAX);
    Cleaner {
        threads: app.broker.config.log.cleaner.threads,
        max_dirty_percent: metrics.max_dirty_percent,
        time_since_last_run_ms: metrics.time_since_last_run_ms,
        completed_rounds: metrics.completed_rounds,
        failed_rounds: metrics.failed_rounds,
        uncleanable_partitions: metrics.uncleanable_partitions_count,
        uncleanable_bytes: metrics.uncleanable_bytes,
        bytes_read: metrics.bytes_read,
        bytes_written: metrics.bytes_written,
        partitions,
    }
}

/// `GET /api/v1/health`.
pub(super) async fn health(State(app): State<App>) -> Result<Json<Health>, ApiError> {
    let work = app.clone();
    let mut cleaner = blocking(move || Ok(cleaner(&work))).await?;
    cleaner
        .partitions
        .retain(|p| super::auth::may(&app, crate::security::acl::AclOperation::Describe, &p.topic));
    let broker = &app.broker;
    let latency = broker.log_files().fsync_latency();
    let files = broker.log_files().stats();
    let recovery =
        broker.console.recovery.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let mut requests = app.history.rates();
    requests.sort_by_key(|rate| std::cmp::Reverse(rate.requests_total));
    Ok(Json(Health {
        cleaner,
        recovery,
        fsync_latency: FsyncLatency {
            count: latency.count,
            p50_us: latency.p50_us,
            p99_us: latency.p99_us,
            p999_us: latency.p999_us,
            max_us: latency.max_us,
        },
        open_files: OpenFiles {
            open: files.open_files,
            max: broker.log_files().open_files_max(),
            peak: files.open_files_peak,
            evictions: files.evictions,
        },
        requests,
        offline_log_dirs: broker
            .manager()
            .offline_dirs()
            .iter()
            .map(|dir| dir.display().to_string())
            .collect(),
        fenced_tiered_partitions: broker
            .fenced_tiered_partitions()
            .iter()
            .map(ToString::to_string)
            .collect(),
    }))
}
