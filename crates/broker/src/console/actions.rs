//! The console's changes: create or delete a topic, alter a topic's configs, delete records,
//! reset a group's committed offsets. Each is refused (403) unless
//! `seglog.console.actions.enable` is set, and each is one Kafka request to the broker's own
//! handlers (CreateTopics, DeleteTopics, IncrementalAlterConfigs, DeleteRecords,
//! OffsetCommit), so it gets their checks, their errors and their ACLs.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    CreateTopicsRequest, DeleteRecordsRequest, DeleteTopicsRequest, GroupId,
    IncrementalAlterConfigsRequest, OffsetCommitRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use seglog_storage::log::partition_log::TopicPartition;
use serde::{Deserialize, Serialize};

use super::{ApiError, App, JsonBody, Path, blocking, kafka};

/// What an action answers.
#[derive(Debug, Serialize)]
pub(super) struct Done {
    ok: bool,
    message: String,
}

/// An action's answer; every partition's row is read again after it.
fn done(app: &App, message: String) -> Json<Done> {
    app.rows.clear();
    Json(Done { ok: true, message })
}

fn check_enabled(app: &App) -> Result<(), ApiError> {
    if app.broker.config.console.actions_enable {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "the console is read-only: set seglog.console.actions.enable=true to allow actions",
        ))
    }
}

fn name(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CreateTopic {
    name: String,
    partitions: Option<i32>,
    #[serde(default)]
    configs: BTreeMap<String, String>,
}

/// `POST /api/v1/topics`.
pub(super) async fn create_topic(
    State(app): State<App>,
    JsonBody(body): JsonBody<CreateTopic>,
) -> Result<(StatusCode, Json<Done>), ApiError> {
    check_enabled(&app)?;
    let partitions = body.partitions.unwrap_or(-1);
    let topic = CreatableTopic::default()
        .with_name(TopicName(name(&body.name)))
        .with_num_partitions(partitions)
        .with_replication_factor(-1)
        .with_configs(
            body.configs
                .iter()
                .map(|(k, v)| {
                    CreatableTopicConfig::default().with_name(name(k)).with_value(Some(name(v)))
                })
                .collect(),
        );
    let request = CreateTopicsRequest::default().with_topics(vec![topic]).with_timeout_ms(30_000);
    let response = kafka::call(&app.broker, app.session(), &request, 7).await?;
    let result = kafka::first("CreateTopics", &response.topics)?;
    kafka::ok("CreateTopics", result.error_code, result.error_message.as_ref())?;
    Ok((
        StatusCode::CREATED,
        done(
            &app,
            format!("topic {} created with {} partitions", body.name, result.num_partitions),
        ),
    ))
}

/// `DELETE /api/v1/topics/{topic}`.
pub(super) async fn delete_topic(
    State(app): State<App>,
    Path(topic): Path<String>,
) -> Result<Json<Done>, ApiError> {
    check_enabled(&app)?;
    let request = DeleteTopicsRequest::default()
        .with_topic_names(vec![TopicName(name(&topic))])
        .with_timeout_ms(30_000);
    let response = kafka::call(&app.broker, app.session(), &request, 4).await?;
    let result = kafka::first("DeleteTopics", &response.responses)?;
    kafka::ok("DeleteTopics", result.error_code, result.error_message.as_ref())?;
    Ok(done(&app, format!("topic {topic} deleted")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AlterConfigs {
    #[serde(default)]
    set: BTreeMap<String, String>,
    #[serde(default)]
    delete: Vec<String>,
}

/// `POST /api/v1/topics/{topic}/configs`: set and delete topic overrides.
pub(super) async fn alter_configs(
    State(app): State<App>,
    Path(topic): Path<String>,
    JsonBody(body): JsonBody<AlterConfigs>,
) -> Result<Json<Done>, ApiError> {
    check_enabled(&app)?;
    if body.set.is_empty() && body.delete.is_empty() {
        return Err(ApiError::bad_request("nothing to change: give set or delete"));
    }
    let mut configs: Vec<AlterableConfig> = body
        .set
        .iter()
        .map(|(k, v)| {
            AlterableConfig::default()
                .with_name(name(k))
                .with_config_operation(0)
                .with_value(Some(name(v)))
        })
        .collect();
    configs.extend(
        body.delete
            .iter()
            .map(|k| AlterableConfig::default().with_name(name(k)).with_config_operation(1)),
    );
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(name(&topic))
            .with_configs(configs),
    ]);
    let response = kafka::call(&app.broker, app.session(), &request, 1).await?;
    let result = kafka::first("IncrementalAlterConfigs", &response.responses)?;
    kafka::ok("IncrementalAlterConfigs", result.error_code, result.error_message.as_ref())?;
    Ok(done(&app, format!("configs of {topic} altered")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteRecords {
    before_offset: i64,
}

/// `POST /api/v1/topics/{topic}/partitions/{partition}/delete-records`: moves the log start
/// to `before_offset` (-1: the high watermark).
pub(super) async fn delete_records(
    State(app): State<App>,
    Path((topic, partition)): Path<(String, i32)>,
    JsonBody(body): JsonBody<DeleteRecords>,
) -> Result<Json<Done>, ApiError> {
    check_enabled(&app)?;
    let request = DeleteRecordsRequest::default()
        .with_topics(vec![
            DeleteRecordsTopic::default().with_name(TopicName(name(&topic))).with_partitions(vec![
                DeleteRecordsPartition::default()
                    .with_partition_index(partition)
                    .with_offset(body.before_offset),
            ]),
        ])
        .with_timeout_ms(30_000);
    let response = kafka::call(&app.broker, app.session(), &request, 2).await?;
    let Some(result) = response.topics.first().and_then(|t| t.partitions.first()) else {
        return Err(ApiError::internal("DeleteRecords answered nothing"));
    };
    kafka::ok("DeleteRecords", result.error_code, None)?;
    Ok(done(&app, format!("{topic}-{partition} now starts at {}", result.low_watermark)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResetOffsets {
    /// `earliest`, `latest`, `offset` or `timestamp`.
    to: String,
    offset: Option<i64>,
    timestamp: Option<i64>,
    /// Only this topic's partitions (default: every partition the group committed).
    topic: Option<String>,
}

/// Where `spec` puts `tp`'s committed offset.
fn target_offset(app: &App, tp: &TopicPartition, spec: &ResetOffsets) -> Result<i64, ApiError> {
    let what = tp.to_string();
    let log = app.broker.manager().get_log(tp).map_err(|e| ApiError::storage(&what, &e))?;
    let storage = |e: seglog_storage::Error| ApiError::storage(&what, &e);
    let start = log.log_start_offset().map_err(storage)?;
    let end = log.high_watermark().map_err(storage)?;
    match spec.to.as_str() {
        "earliest" => Ok(start),
        "latest" => Ok(end),
        "offset" => {
            let offset =
                spec.offset.ok_or_else(|| ApiError::bad_request("to=offset needs offset"))?;
            Ok(offset.clamp(start, end))
        }
        "timestamp" => {
            let timestamp = spec.timestamp.filter(|t| *t >= 0).ok_or_else(|| {
                ApiError::bad_request("to=timestamp needs a timestamp of 0 or more")
            })?;
            let found = log.fetch_offset_by_timestamp(timestamp).map_err(storage)?;
            Ok(found.map_or(end, |found| found.offset))
        }
        other => Err(ApiError::bad_request(format!(
            "to must be earliest, latest, offset or timestamp, not {other:?}"
        ))),
    }
}

/// `POST /api/v1/groups/{group}/reset-offsets`: commits new offsets for an empty group, as
/// `kafka-consumer-groups.sh --reset-offsets --execute` does (the coordinator refuses a group
/// with members).
pub(super) async fn reset_offsets(
    State(app): State<App>,
    Path(group): Path<String>,
    JsonBody(spec): JsonBody<ResetOffsets>,
) -> Result<Json<Done>, ApiError> {
    check_enabled(&app)?;
    let mut partitions: Vec<TopicPartition> =
        super::groups::committed_partitions(&app, &group).await?;
    if let Some(topic) = &spec.topic {
        partitions.retain(|tp| &tp.topic == topic);
        if partitions.is_empty() {
            let manager = app.broker.manager();
            partitions = manager.partitions().into_iter().filter(|tp| &tp.topic == topic).collect();
        }
    }
    if partitions.is_empty() {
        return Err(ApiError::not_found(format!("group {group:?} has no offsets to reset")));
    }
    let work = app.clone();
    let targets = blocking(move || {
        partitions
            .into_iter()
            .map(|tp| Ok((target_offset(&work, &tp, &spec)?, tp)))
            .collect::<Result<Vec<(i64, TopicPartition)>, ApiError>>()
    })
    .await?;
    let mut by_topic: BTreeMap<String, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for (offset, tp) in &targets {
        by_topic.entry(tp.topic.clone()).or_default().push(
            OffsetCommitRequestPartition::default()
                .with_partition_index(tp.partition)
                .with_committed_offset(*offset),
        );
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(name(&group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(name(&topic)))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    let response = kafka::call(&app.broker, app.session(), &request, 9).await?;
    for topic in &response.topics {
        for partition in &topic.partitions {
            if partition.error_code != 0 {
                return Err(kafka::wire_error("OffsetCommit", partition.error_code, None));
            }
        }
    }
    Ok(done(&app, format!("{} offsets of group {group} reset", targets.len())))
}
