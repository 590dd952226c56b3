//! Topics and partitions: the topic list (paged, sorted, filtered), a topic's partitions and
//! configs, a partition's segments as a timeline with its retention cut points, a segment's
//! dump, and the message browser. Unloaded partitions (a lazy start) are shown from their
//! checkpoints and never loaded for a list; a partition's own pages load it, as a read would.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use base64::Engine as _;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use seglog_format::{Batches, DecodeLimits};
use seglog_storage::config::LogConfig;
use seglog_storage::log::partition_log::{
    Isolation, LogSummary, PartitionLog, SegmentSummary, TopicPartition,
};
use serde::{Deserialize, Serialize};

use super::auth::{check, may};
use super::{
    ApiError, App, DUMP_LINES_MAX, DumpRequest, PAGE_ITEMS_MAX, Path, Query, blocking, kafka,
};
use crate::Broker;
use crate::security::acl::AclOperation;

/// The most bytes one message page reads from a log (a larger first batch is still read
/// whole, as a consumer's fetch would: at most the topic's `max.message.bytes`).
pub(super) const MESSAGE_BYTES_MAX: u32 = 1 << 20;
/// The most records one message page returns.
pub(super) const MESSAGES_MAX: usize = 100;

/// One partition's offsets and size, as cheap as the partition allows.
#[derive(Debug, Clone, Serialize)]
pub(super) struct PartitionRow {
    #[serde(skip)]
    pub(super) topic: String,
    pub(super) partition: i32,
    /// Loaded: its figures are live; otherwise they come from the checkpoints.
    pub(super) loaded: bool,
    pub(super) offline: bool,
    pub(super) log_dir: Option<String>,
    pub(super) size_bytes: Option<u64>,
    pub(super) log_start_offset: Option<i64>,
    pub(super) local_log_start_offset: Option<i64>,
    pub(super) high_watermark: Option<i64>,
    pub(super) last_stable_offset: Option<i64>,
    pub(super) log_end_offset: Option<i64>,
    pub(super) segments: Option<usize>,
}

fn row(broker: &Broker, tp: &TopicPartition) -> PartitionRow {
    let mut row = PartitionRow {
        topic: tp.topic.clone(),
        partition: tp.partition,
        loaded: false,
        offline: false,
        log_dir: None,
        size_bytes: None,
        log_start_offset: None,
        local_log_start_offset: None,
        high_watermark: None,
        last_stable_offset: None,
        log_end_offset: None,
        segments: None,
    };
    let Ok(log) = broker.manager().get_log(tp) else {
        row.offline = true;
        return row;
    };
    row.log_dir = log.dir().parent().map(|dir| dir.display().to_string());
    if !log.is_loaded() {
        if let Ok(offsets) = log.checkpoint_offsets() {
            row.high_watermark = offsets.high_watermark;
            row.log_start_offset = offsets.log_start_offset;
        }
        return row;
    }
    row.loaded = true;
    if let Ok(figures) = log.figures() {
        row.size_bytes = Some(figures.size_bytes);
        row.log_start_offset = Some(figures.log_start_offset);
        row.local_log_start_offset = Some(figures.local_log_start_offset);
        row.high_watermark = Some(figures.high_watermark);
        row.last_stable_offset = Some(figures.last_stable_offset);
        row.log_end_offset = Some(figures.log_end_offset);
        row.segments = Some(figures.segments);
    } else {
        row.offline = true;
    }
    row
}

/// How long every partition's rows are reused: the overview, the topic list and a topic's page
/// read them all, and at 10,000 partitions a scan costs milliseconds of a core.
const ROWS_TTL: Duration = Duration::from_secs(1);

/// Every partition's row, at most [`ROWS_TTL`] old (an action clears it).
#[derive(Debug, Default)]
pub(super) struct RowsCache {
    rows: Mutex<Option<(Instant, Arc<Vec<PartitionRow>>)>>,
}

impl RowsCache {
    /// Every partition's row, in order; loads no partition (a blocking call).
    pub(super) fn get(&self, broker: &Broker) -> Arc<Vec<PartitionRow>> {
        if let Some((at, rows)) = &*self.rows.lock().unwrap_or_else(PoisonError::into_inner)
            && at.elapsed() < ROWS_TTL
        {
            return Arc::clone(rows);
        }
        let rows: Arc<Vec<PartitionRow>> =
            Arc::new(broker.manager().partitions().iter().map(|tp| row(broker, tp)).collect());
        *self.rows.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now(), Arc::clone(&rows)));
        rows
    }

    /// Forgets the rows (after an action changed them).
    pub(super) fn clear(&self) {
        *self.rows.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    filter: Option<String>,
    sort: Option<String>,
    order: Option<String>,
    offset: Option<usize>,
    limit: Option<usize>,
    internal: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct TopicItem {
    name: String,
    internal: bool,
    partitions: usize,
    partitions_unloaded: usize,
    size_bytes: u64,
    records: i64,
    retention_ms: i64,
    retention_bytes: i64,
    cleanup_policy: String,
    durability: String,
    remote_storage: bool,
}

#[derive(Serialize)]
pub(super) struct TopicList {
    total: usize,
    offset: usize,
    limit: usize,
    topics: Vec<TopicItem>,
}

/// The page bounds of a list: `offset` from 0, `limit` 1 to [`PAGE_ITEMS_MAX`] (default 50).
pub(super) fn page_bounds(
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<(usize, usize), ApiError> {
    let limit = limit.unwrap_or(50);
    if limit == 0 || limit > PAGE_ITEMS_MAX {
        return Err(ApiError::bad_request(format!(
            "limit must be between 1 and {PAGE_ITEMS_MAX}, not {limit}"
        )));
    }
    Ok((offset.unwrap_or(0), limit))
}

fn topic_items(broker: &Broker, rows: &[PartitionRow]) -> Vec<TopicItem> {
    let mut by_topic: BTreeMap<&str, Vec<&PartitionRow>> = BTreeMap::new();
    for row in rows {
        by_topic.entry(row.topic.as_str()).or_default().push(row);
    }
    by_topic
        .into_iter()
        .map(|(name, rows)| {
            let config = broker.manager().topic_config(name).unwrap_or_default();
            let properties = config.to_properties();
            let text = |key: &str| properties.get(key).cloned().unwrap_or_default();
            TopicItem {
                name: name.to_owned(),
                internal: name.starts_with("__"),
                partitions: rows.len(),
                partitions_unloaded: rows.iter().filter(|row| !row.loaded).count(),
                size_bytes: rows.iter().filter_map(|row| row.size_bytes).sum(),
                records: rows
                    .iter()
                    .filter_map(|row| Some(row.high_watermark? - row.log_start_offset.unwrap_or(0)))
                    .map(|n| n.max(0))
                    .sum(),
                retention_ms: config.retention_ms,
                retention_bytes: config.retention_bytes,
                cleanup_policy: text("cleanup.policy"),
                durability: text("seglog.durability"),
                remote_storage: config.remote_storage_enable,
            }
        })
        .collect()
}

/// `GET /api/v1/topics`.
pub(super) async fn list(
    State(app): State<App>,
    Query(query): Query<ListQuery>,
) -> Result<Json<TopicList>, ApiError> {
    let (offset, limit) = page_bounds(query.offset, query.limit)?;
    let descending = match query.order.as_deref() {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!("order must be asc or desc, not {other:?}")));
        }
    };
    let sort = query.sort.clone().unwrap_or_else(|| "name".to_owned());
    if !["name", "partitions", "size", "records", "retention"].contains(&sort.as_str()) {
        return Err(ApiError::bad_request(format!(
            "sort must be one of name, partitions, size, records, retention, not {sort:?}"
        )));
    }
    let work = app.clone();
    let mut topics = blocking(move || {
        let rows = work.rows.get(&work.broker);
        Ok(topic_items(&work.broker, &rows))
    })
    .await?;
    topics.retain(|topic| may(&app, AclOperation::Describe, &topic.name));
    if let Some(filter) = query.filter.as_deref().filter(|f| !f.is_empty()) {
        let filter = filter.to_lowercase();
        topics.retain(|topic| topic.name.to_lowercase().contains(&filter));
    }
    if !query.internal.unwrap_or(true) {
        topics.retain(|topic| !topic.internal);
    }
    match sort.as_str() {
        "partitions" => topics.sort_by_key(|topic| topic.partitions),
        "size" => topics.sort_by_key(|topic| topic.size_bytes),
        "records" => topics.sort_by_key(|topic| topic.records),
        "retention" => topics.sort_by_key(|topic| topic.retention_ms),
        _ => {}
    }
    if descending {
        topics.reverse();
    }
    let total = topics.len();
    let topics = topics.into_iter().skip(offset).take(limit).collect();
    Ok(Json(TopicList { total, offset, limit, topics }))
}

#[derive(Serialize)]
struct ConfigView {
    name: String,
    value: Option<String>,
    source: &'static str,
    read_only: bool,
    sensitive: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PartitionsQuery {
    offset: Option<usize>,
    limit: Option<usize>,
}

#[derive(Serialize)]
pub(super) struct TopicView {
    #[serde(flatten)]
    summary: TopicItem,
    topic_id: String,
    /// One page of the partitions (`offset`, `limit`), in order.
    partitions_offset: usize,
    partition_rows: Vec<PartitionRow>,
    configs: Vec<ConfigView>,
}

/// Kafka's `ConfigSource` ids, by name.
fn config_source(id: i8) -> &'static str {
    match id {
        1 => "DYNAMIC_TOPIC_CONFIG",
        2 => "DYNAMIC_BROKER_CONFIG",
        3 => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        4 => "STATIC_BROKER_CONFIG",
        5 => "DEFAULT_CONFIG",
        6 => "DYNAMIC_BROKER_LOGGER_CONFIG",
        7 => "CLIENT_METRICS_CONFIG",
        8 => "GROUP_CONFIG",
        _ => "UNKNOWN",
    }
}

/// The topic's configs as DescribeConfigs answers them (with their sources).
async fn topic_configs(app: &App, topic: &str) -> Result<Vec<ConfigView>, ApiError> {
    let request = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_string(topic.to_owned())),
    ]);
    let response: DescribeConfigsResponse =
        kafka::call(&app.broker, app.session(), &request, 4).await?;
    let result = kafka::first("DescribeConfigs", &response.results)?;
    kafka::ok("DescribeConfigs", result.error_code, result.error_message.as_ref())?;
    Ok(result
        .configs
        .iter()
        .map(|entry| ConfigView {
            name: entry.name.to_string(),
            value: entry.value.as_ref().map(ToString::to_string),
            source: config_source(entry.config_source),
            read_only: entry.read_only,
            sensitive: entry.is_sensitive,
        })
        .collect())
}

/// `GET /api/v1/topics/{topic}`.
pub(super) async fn describe(
    State(app): State<App>,
    Path(topic): Path<String>,
    Query(query): Query<PartitionsQuery>,
) -> Result<Json<TopicView>, ApiError> {
    check(&app, AclOperation::Describe, &topic)?;
    let (offset, limit) = page_bounds(query.offset, query.limit)?;
    let work = app.clone();
    let name = topic.clone();
    let (summary, partitions, topic_id) = blocking(move || {
        let broker = &work.broker;
        let rows: Vec<PartitionRow> =
            work.rows.get(broker).iter().filter(|row| row.topic == name).cloned().collect();
        let Some(summary) = topic_items(broker, &rows).into_iter().next() else {
            return Err(ApiError::not_found(format!("no topic {name:?}")));
        };
        let topic_id = broker
            .manager()
            .topic_id(&name)
            .map(|id| seglog_format::java::uuid_to_base64(&id))
            .unwrap_or_default();
        let page = rows.into_iter().skip(offset).take(limit).collect();
        Ok((summary, page, topic_id))
    })
    .await?;
    let configs = topic_configs(&app, &topic).await?;
    Ok(Json(TopicView {
        summary,
        topic_id,
        partitions_offset: offset,
        partition_rows: partitions,
        configs,
    }))
}

/// `topic` and `partition` of a path, checked.
fn topic_partition(topic: String, partition: i32) -> Result<TopicPartition, ApiError> {
    if partition < 0 {
        return Err(ApiError::bad_request(format!("partition must be 0 or more, not {partition}")));
    }
    Ok(TopicPartition { topic, partition })
}

fn log_of(broker: &Broker, tp: &TopicPartition) -> Result<Arc<PartitionLog>, ApiError> {
    broker.manager().get_log(tp).map_err(|error| ApiError::storage(&tp.to_string(), &error))
}

#[derive(Serialize)]
struct SegmentView {
    #[serde(flatten)]
    segment: SegmentSummaryView,
    /// active, deleting, remote, or closed; with `cleaned` and `tiered` as flags.
    state: &'static str,
    cleaned: bool,
    tiered: bool,
}

#[derive(Serialize)]
struct SegmentSummaryView {
    base_offset: i64,
    end_offset: Option<i64>,
    size_bytes: u64,
    first_timestamp_ms: Option<i64>,
    largest_timestamp_ms: Option<i64>,
    offset_index_entries: u64,
    offset_index_entries_max: u64,
    time_index_entries: u64,
    time_index_entries_max: u64,
}

impl From<&SegmentSummary> for SegmentSummaryView {
    fn from(s: &SegmentSummary) -> Self {
        Self {
            base_offset: s.base_offset,
            end_offset: s.end_offset,
            size_bytes: u64::from(s.size_bytes),
            first_timestamp_ms: s.first_timestamp_ms,
            largest_timestamp_ms: s.largest_timestamp_ms,
            offset_index_entries: s.offset_index_entries,
            offset_index_entries_max: s.offset_index_entries_max,
            time_index_entries: s.time_index_entries,
            time_index_entries_max: s.time_index_entries_max,
        }
    }
}

/// Where a retention rule would cut the log now: the first offset it keeps, and the bytes
/// and segments below it that it would delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct CutPoint {
    rule: &'static str,
    offset: i64,
    segments: usize,
    bytes: u64,
}

/// The local segments (not being deleted, not active) that time retention of `retention_ms`
/// would delete at `now_ms`, as Kafka's `deleteRetentionMsBreachedSegments` walks them: from
/// the oldest while its largest timestamp is older than the limit.
fn time_cut(
    rule: &'static str,
    segments: &[&SegmentSummary],
    retention_ms: i64,
    now_ms: i64,
) -> Option<CutPoint> {
    if retention_ms < 0 {
        return None;
    }
    let mut cut = CutPoint { rule, offset: segments.first()?.base_offset, segments: 0, bytes: 0 };
    for segment in segments.iter().filter(|s| !s.active) {
        match segment.largest_timestamp_ms {
            Some(ts) if now_ms - ts > retention_ms => {
                cut.offset = segment.end_offset.unwrap_or(segment.base_offset);
                cut.segments += 1;
                cut.bytes += u64::from(segment.size_bytes);
            }
            _ => break,
        }
    }
    Some(cut)
}

/// The same for size retention (`deleteRetentionSizeBreachedSegments`): the oldest segments
/// while the log stays at or above `retention_bytes` without them.
fn size_cut(
    rule: &'static str,
    segments: &[&SegmentSummary],
    retention_bytes: i64,
) -> Option<CutPoint> {
    let limit = u64::try_from(retention_bytes).ok()?;
    let total: u64 = segments.iter().map(|s| u64::from(s.size_bytes)).sum();
    let mut over = total.saturating_sub(limit);
    let mut cut = CutPoint { rule, offset: segments.first()?.base_offset, segments: 0, bytes: 0 };
    for segment in segments.iter().filter(|s| !s.active) {
        let size = u64::from(segment.size_bytes);
        if total <= limit || over < size {
            break;
        }
        over -= size;
        cut.offset = segment.end_offset.unwrap_or(segment.base_offset);
        cut.segments += 1;
        cut.bytes += size;
    }
    Some(cut)
}

fn cut_points(summary: &LogSummary, config: &LogConfig, now_ms: i64) -> Vec<CutPoint> {
    let local: Vec<&SegmentSummary> = summary.segments.iter().filter(|s| !s.deleting).collect();
    let mut cuts = Vec::new();
    cuts.extend(time_cut("retention.ms", &local, config.retention_ms, now_ms));
    cuts.extend(size_cut("retention.bytes", &local, config.retention_bytes));
    if config.remote_storage_enable {
        let local_ms = if config.local_retention_ms == -2 {
            config.retention_ms
        } else {
            config.local_retention_ms
        };
        let local_bytes = if config.local_retention_bytes == -2 {
            config.retention_bytes
        } else {
            config.local_retention_bytes
        };
        cuts.extend(time_cut("local.retention.ms", &local, local_ms, now_ms));
        cuts.extend(size_cut("local.retention.bytes", &local, local_bytes));
    }
    cuts
}

#[derive(Serialize)]
pub(super) struct SegmentsView {
    topic: String,
    partition: i32,
    log_start_offset: i64,
    local_log_start_offset: i64,
    high_watermark: i64,
    last_stable_offset: i64,
    log_end_offset: i64,
    recovery_point: i64,
    highest_offset_in_remote_storage: i64,
    first_dirty_offset: Option<i64>,
    dirty_ratio: Option<f64>,
    size_bytes: u64,
    cut_points: Vec<CutPoint>,
    /// Segments in offset order: the bucket's (tiered, no longer local), the local ones, then
    /// those being deleted; at most [`SEGMENTS_MAX`], the newest kept.
    segments: Vec<SegmentView>,
    segments_omitted: usize,
}

/// The most segments one timeline returns (the newest).
pub(super) const SEGMENTS_MAX: usize = 2000;

/// `GET /api/v1/topics/{topic}/partitions/{partition}/segments`.
pub(super) async fn segments(
    State(app): State<App>,
    Path((topic, partition)): Path<(String, i32)>,
) -> Result<Json<SegmentsView>, ApiError> {
    check(&app, AclOperation::Describe, &topic)?;
    let tp = topic_partition(topic, partition)?;
    let broker = Arc::clone(&app.broker);
    let view = blocking(move || {
        let log = log_of(&broker, &tp)?;
        let what = tp.to_string();
        let summary = log.summary().map_err(|e| ApiError::storage(&what, &e))?;
        let config = log.config().map_err(|e| ApiError::storage(&what, &e))?;
        let last_stable_offset =
            log.last_stable_offset().map_err(|e| ApiError::storage(&what, &e))?;
        let cleaner = broker.manager().partition_cleaner_state(&tp).ok().flatten();
        let first_dirty = cleaner.as_ref().map(|c| c.first_dirty_offset);
        let tiered_to = summary.highest_offset_in_remote_storage;
        let mut views = Vec::new();
        let local_start = summary.local_log_start_offset;
        if let Some(remote) = broker.tiering.as_ref().and_then(|t| t.known_remote_segments(&tp)) {
            for entry in remote.iter().filter(|e| e.base_offset < local_start) {
                views.push(SegmentView {
                    segment: SegmentSummaryView {
                        base_offset: entry.base_offset,
                        end_offset: Some(entry.last_offset + 1),
                        size_bytes: entry.log_bytes,
                        first_timestamp_ms: None,
                        largest_timestamp_ms: Some(entry.max_timestamp_ms),
                        offset_index_entries: 0,
                        offset_index_entries_max: 0,
                        time_index_entries: 0,
                        time_index_entries_max: 0,
                    },
                    state: "remote",
                    cleaned: false,
                    tiered: true,
                });
            }
        }
        for segment in &summary.segments {
            let end = segment.end_offset;
            views.push(SegmentView {
                segment: segment.into(),
                state: if segment.deleting {
                    "deleting"
                } else if segment.active {
                    "active"
                } else {
                    "closed"
                },
                cleaned: !segment.active
                    && first_dirty.is_some_and(|dirty| end.is_some_and(|end| end <= dirty)),
                tiered: end.is_some_and(|end| end - 1 <= tiered_to),
            });
        }
        let segments_omitted = views.len().saturating_sub(SEGMENTS_MAX);
        views.drain(..segments_omitted);
        Ok(SegmentsView {
            topic: tp.topic.clone(),
            partition: tp.partition,
            log_start_offset: summary.log_start_offset,
            local_log_start_offset: summary.local_log_start_offset,
            high_watermark: summary.high_watermark,
            last_stable_offset,
            log_end_offset: summary.log_end_offset,
            recovery_point: summary.recovery_point,
            highest_offset_in_remote_storage: summary.highest_offset_in_remote_storage,
            first_dirty_offset: first_dirty,
            dirty_ratio: cleaner.map(|c| c.dirty_ratio),
            size_bytes: summary
                .segments
                .iter()
                .filter(|s| !s.deleting)
                .map(|s| u64::from(s.size_bytes))
                .sum(),
            cut_points: cut_points(&summary, &config, crate::handlers::now_ms()),
            segments: views,
            segments_omitted,
        })
    })
    .await?;
    Ok(Json(view))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DumpQuery {
    file: Option<String>,
    page: Option<usize>,
    lines: Option<usize>,
    print_data_log: Option<bool>,
}

#[derive(Serialize)]
pub(super) struct DumpView {
    file: String,
    page: usize,
    lines_per_page: usize,
    lines: Vec<String>,
    more: bool,
}

/// `GET /api/v1/topics/{topic}/partitions/{partition}/segments/{base_offset}/dump`: one page
/// of `seglog dump --files <segment file>`.
pub(super) async fn dump(
    State(app): State<App>,
    Path((topic, partition, base_offset)): Path<(String, i32, i64)>,
    Query(query): Query<DumpQuery>,
) -> Result<Json<DumpView>, ApiError> {
    let print_data_log = query.print_data_log.unwrap_or(false);
    let operation = if print_data_log { AclOperation::Read } else { AclOperation::Describe };
    check(&app, operation, &topic)?;
    let tp = topic_partition(topic, partition)?;
    let suffix = match query.file.as_deref().unwrap_or("log") {
        "log" => "log",
        "index" => "index",
        "timeindex" => "timeindex",
        other => {
            return Err(ApiError::bad_request(format!(
                "file must be log, index or timeindex, not {other:?}"
            )));
        }
    };
    let lines_per_page = query.lines.unwrap_or(200);
    if lines_per_page == 0 || lines_per_page > DUMP_LINES_MAX {
        return Err(ApiError::bad_request(format!(
            "lines must be between 1 and {DUMP_LINES_MAX}, not {lines_per_page}"
        )));
    }
    let page = query.page.unwrap_or(0);
    let Some(dump) = app.dump.clone() else {
        return Err(ApiError::new(
            axum::http::StatusCode::NOT_IMPLEMENTED,
            "this broker was started without the dump tool (seglog serve has it)",
        ));
    };
    let broker = Arc::clone(&app.broker);
    let view = blocking(move || {
        let log = log_of(&broker, &tp)?;
        let what = tp.to_string();
        let summary = log.summary().map_err(|e| ApiError::storage(&what, &e))?;
        if !summary.segments.iter().any(|s| s.base_offset == base_offset && !s.deleting) {
            return Err(ApiError::not_found(format!(
                "{tp} has no local segment with base offset {base_offset}"
            )));
        }
        let file = format!("{base_offset:020}.{suffix}");
        let request = DumpRequest {
            path: log.dir().join(&file),
            print_data_log,
            skip_lines: page.saturating_mul(lines_per_page),
            lines_max: lines_per_page,
        };
        let dumped = dump(&request).map_err(|e| ApiError::internal(format!("{file}: {e}")))?;
        Ok(DumpView { file, page, lines_per_page, lines: dumped.lines, more: dumped.more })
    })
    .await?;
    Ok(Json(view))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MessagesQuery {
    from: Option<String>,
    offset: Option<i64>,
    timestamp: Option<i64>,
    limit: Option<usize>,
}

#[derive(Serialize)]
struct HeaderView {
    key: String,
    value: Option<String>,
}

#[derive(Serialize)]
struct MessageView {
    offset: i64,
    timestamp: i64,
    timestamp_type: &'static str,
    /// Base64 of the key's bytes, or null.
    key: Option<String>,
    /// Base64 of the value's bytes, or null (a tombstone).
    value: Option<String>,
    /// Header values in base64.
    headers: Vec<HeaderView>,
    size_bytes: usize,
}

#[derive(Serialize)]
pub(super) struct MessagesView {
    topic: String,
    partition: i32,
    start_offset: i64,
    next_offset: i64,
    log_start_offset: i64,
    high_watermark: i64,
    messages: Vec<MessageView>,
}

/// Where a message page starts: `from` = `offset` (with `offset`), `timestamp` (with
/// `timestamp`, the first record at or after it), `earliest`, or `end` (the last `limit`).
fn start_offset(log: &PartitionLog, query: &MessagesQuery, limit: usize) -> Result<i64, ApiError> {
    let what = log.topic_partition().to_string();
    let storage = |e: seglog_storage::Error| ApiError::storage(&what, &e);
    let log_start = log.log_start_offset().map_err(storage)?;
    let high_watermark = log.high_watermark().map_err(storage)?;
    match query.from.as_deref().unwrap_or("end") {
        "offset" => {
            let Some(offset) = query.offset else {
                return Err(ApiError::bad_request("from=offset needs offset"));
            };
            if offset < 0 {
                return Err(ApiError::bad_request(format!(
                    "offset must be 0 or more, not {offset}"
                )));
            }
            Ok(offset.max(log_start))
        }
        "timestamp" => {
            let Some(timestamp) = query.timestamp.filter(|t| *t >= 0) else {
                return Err(ApiError::bad_request("from=timestamp needs a timestamp of 0 or more"));
            };
            let found = log.fetch_offset_by_timestamp(timestamp).map_err(storage)?;
            Ok(found.map_or(high_watermark, |found| found.offset))
        }
        "earliest" => Ok(log_start),
        "end" => Ok((high_watermark - i64::try_from(limit).unwrap_or(0)).max(log_start)),
        other => Err(ApiError::bad_request(format!(
            "from must be offset, timestamp, earliest or end, not {other:?}"
        ))),
    }
}

fn encode(bytes: Option<&[u8]>) -> Option<String> {
    bytes.map(|b| base64::engine::general_purpose::STANDARD.encode(b))
}

fn read_messages(
    log: &PartitionLog,
    start: i64,
    limit: usize,
) -> Result<(Vec<MessageView>, i64), ApiError> {
    let what = log.topic_partition().to_string();
    let high_watermark = log.high_watermark().map_err(|e| ApiError::storage(&what, &e))?;
    let mut messages = Vec::new();
    let mut next = start;
    if start >= high_watermark {
        return Ok((messages, next));
    }
    let read = log
        .read(start, MESSAGE_BYTES_MAX, Isolation::HighWatermark, true)
        .map_err(|e| ApiError::storage(&what, &e))?;
    for item in Batches::at_position(&read.records, u64::from(read.position)) {
        let item = item.map_err(|e| ApiError::internal(format!("{what}: corrupt batch: {e}")))?;
        if item.batch.is_control_batch() {
            next = next.max(item.batch.next_offset());
            continue;
        }
        let records = item
            .batch
            .records(DecodeLimits::default())
            .map_err(|e| ApiError::internal(format!("{what}: corrupt batch: {e}")))?;
        for record in &records {
            let record =
                record.map_err(|e| ApiError::internal(format!("{what}: corrupt record: {e}")))?;
            if record.offset < start {
                continue;
            }
            if messages.len() == limit {
                return Ok((messages, next));
            }
            next = record.offset + 1;
            messages.push(MessageView {
                offset: record.offset,
                timestamp: record.timestamp,
                timestamp_type: if record.timestamp_type
                    == seglog_format::TimestampType::LogAppendTime
                {
                    "LogAppendTime"
                } else {
                    "CreateTime"
                },
                key: encode(record.key),
                value: encode(record.value),
                headers: record
                    .headers
                    .iter()
                    .map(|h| HeaderView {
                        key: String::from_utf8_lossy(h.key).into_owned(),
                        value: encode(h.value),
                    })
                    .collect(),
                size_bytes: record.size_bytes,
            });
        }
        next = next.max(item.batch.next_offset());
    }
    Ok((messages, next))
}

/// `GET /api/v1/topics/{topic}/partitions/{partition}/messages`.
pub(super) async fn messages(
    State(app): State<App>,
    Path((topic, partition)): Path<(String, i32)>,
    Query(query): Query<MessagesQuery>,
) -> Result<Json<MessagesView>, ApiError> {
    check(&app, AclOperation::Read, &topic)?;
    let tp = topic_partition(topic, partition)?;
    let limit = query.limit.unwrap_or(20);
    if limit == 0 || limit > MESSAGES_MAX {
        return Err(ApiError::bad_request(format!(
            "limit must be between 1 and {MESSAGES_MAX}, not {limit}"
        )));
    }
    let broker = Arc::clone(&app.broker);
    let view = blocking(move || {
        let log = log_of(&broker, &tp)?;
        let start = start_offset(&log, &query, limit)?;
        let what = tp.to_string();
        let local_start = log.local_log_start_offset().map_err(|e| ApiError::storage(&what, &e))?;
        if start < local_start {
            return Err(ApiError::bad_request(format!(
                "offset {start} of {tp} is in remote storage (local segments start at \
                 {local_start}); the browser reads local segments"
            )));
        }
        let (messages, next_offset) = read_messages(&log, start, limit)?;
        Ok(MessagesView {
            topic: tp.topic.clone(),
            partition: tp.partition,
            start_offset: start,
            next_offset,
            log_start_offset: log.log_start_offset().map_err(|e| ApiError::storage(&what, &e))?,
            high_watermark: log.high_watermark().map_err(|e| ApiError::storage(&what, &e))?,
            messages,
        })
    })
    .await?;
    Ok(Json(view))
}

#[cfg(test)]
mod tests {
    use seglog_storage::log::partition_log::SegmentSummary;

    use super::{size_cut, time_cut};

    fn segment(
        base_offset: i64,
        end: i64,
        size_bytes: u32,
        ts: i64,
        active: bool,
    ) -> SegmentSummary {
        SegmentSummary {
            base_offset,
            end_offset: Some(end),
            size_bytes,
            first_timestamp_ms: Some(ts),
            largest_timestamp_ms: Some(ts),
            offset_index_entries: 0,
            offset_index_entries_max: 10,
            time_index_entries: 0,
            time_index_entries_max: 10,
            active,
            deleting: false,
        }
    }

    #[test]
    fn cut_points_follow_kafkas_retention_walks() {
        let segments = [
            segment(0, 10, 100, 1_000, false),
            segment(10, 20, 100, 2_000, false),
            segment(20, 30, 100, 9_000, false),
            segment(30, 35, 50, 9_500, true),
        ];
        let refs: Vec<&SegmentSummary> = segments.iter().collect();
        let cut = time_cut("retention.ms", &refs, 5_000, 10_000).expect("a cut");
        assert_eq!((cut.offset, cut.segments, cut.bytes), (20, 2, 200));
        assert!(time_cut("retention.ms", &refs, -1, 10_000).is_none());
        // 350 bytes, 120 allowed: the two oldest go (250 left would still be 130 over; the
        // third would leave 50, below the limit, so it stays), never the active one.
        let cut = size_cut("retention.bytes", &refs, 120).expect("a cut");
        assert_eq!((cut.offset, cut.segments, cut.bytes), (20, 2, 200));
        let none = size_cut("retention.bytes", &refs, 1_000).expect("a cut");
        assert_eq!((none.offset, none.segments), (0, 0));
    }
}
