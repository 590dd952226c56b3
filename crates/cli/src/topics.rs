//! `seglog topics`: list, describe, create and delete topics of a log directory.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, Result};
use seglog_storage::log::partition_log::MAX_TIMESTAMP;

use crate::common::{LogDirArgs, open_existing, open_manager};

/// Arguments of `seglog topics`.
#[derive(Debug, clap::Args)]
pub(crate) struct TopicsArgs {
    #[command(flatten)]
    log_dir: LogDirArgs,
    #[command(subcommand)]
    action: TopicsAction,
}

#[derive(Debug, clap::Subcommand)]
enum TopicsAction {
    /// Lists the topics, one per line.
    List,
    /// Shows each partition: log start and end offsets, size, segments, first and last
    /// timestamps, durability, and for compacted topics the dirty ratio and the cleaner's state.
    Describe {
        /// Only this topic.
        #[arg(long)]
        topic: Option<String>,
        /// With `--bucket`: each partition's remote part too (tiered storage), from its
        /// manifest.
        #[command(flatten)]
        bucket: crate::remote::RemoteArgs,
    },
    /// Creates a topic.
    Create {
        /// The topic.
        #[arg(long)]
        topic: String,
        /// Number of partitions.
        #[arg(long, default_value_t = 1)]
        partitions: i32,
        /// A topic config, `key=value` (Kafka's names, e.g. retention.ms=3600000); repeatable.
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
        /// Create it through a running broker (`HOST:PORT`, CreateTopics), as kafka-topics.sh
        /// does, instead of in the log directory: a cluster places its replicas.
        #[arg(long, value_name = "HOST:PORT")]
        bootstrap_server: Option<String>,
        /// With `--bootstrap-server`: the replication factor (-1: the broker's
        /// `default.replication.factor`).
        #[arg(long, default_value_t = -1, requires = "bootstrap_server")]
        replication_factor: i16,
    },
    /// Deletes a topic (renamed for deletion, then removed).
    Delete {
        /// The topic.
        #[arg(long)]
        topic: String,
    },
}

pub(crate) fn run(args: &TopicsArgs) -> Result<()> {
    let dirs = &args.log_dir.log_dir;
    let mut out = std::io::stdout().lock();
    match &args.action {
        TopicsAction::List => {
            let (manager, _) = open_existing(dirs)?;
            for topic in manager.topics() {
                writeln!(out, "{topic}")?;
            }
            manager.shutdown()?;
        }
        TopicsAction::Describe { topic, bucket } => {
            describe(dirs, topic.as_ref(), bucket, &mut out)?;
        }
        TopicsAction::Create {
            topic,
            partitions,
            configs,
            bootstrap_server,
            replication_factor,
        } => {
            let mut overrides = BTreeMap::new();
            for config in configs {
                let (key, value) = config
                    .split_once('=')
                    .with_context(|| format!("--config {config:?} is not key=value"))?;
                overrides.insert(key.trim().to_owned(), value.trim().to_owned());
            }
            if let Some(bootstrap) = bootstrap_server {
                let request = (topic.as_str(), *partitions, *replication_factor);
                let line = create_through(bootstrap, request, &overrides)?;
                writeln!(out, "{line}")?;
                return Ok(());
            }
            let (manager, _) = open_manager(dirs)?;
            let created = manager
                .create_topic(topic, *partitions, overrides)
                .with_context(|| format!("cannot create topic {topic}"))?;
            manager.shutdown()?;
            writeln!(out, "created topic {topic} with {} partitions", created.len())?;
        }
        TopicsAction::Delete { topic } => {
            let (manager, _) = open_existing(dirs)?;
            let n = manager
                .delete_topic(topic)
                .with_context(|| format!("cannot delete topic {topic}"))?;
            manager.shutdown()?;
            writeln!(out, "deleted topic {topic} ({n} partitions)")?;
        }
    }
    Ok(())
}

/// CreateTopics (v5) of `topic` with `partitions` and `replication_factor` through the broker
/// at `bootstrap`: what it created, or its refusal with Kafka's error name and message.
fn create_through(
    bootstrap: &str,
    (topic, partitions, replication_factor): (&str, i32, i16),
    overrides: &BTreeMap<String, String>,
) -> Result<String> {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    use kafka_protocol::messages::{CreateTopicsRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let request = CreateTopicsRequest::default().with_timeout_ms(30_000).with_topics(vec![
        CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_num_partitions(partitions)
            .with_replication_factor(replication_factor)
            .with_configs(
                overrides
                    .iter()
                    .map(|(key, value)| {
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_string(key.clone()))
                            .with_value(Some(StrBytes::from_string(value.clone())))
                    })
                    .collect(),
            ),
    ]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let response = runtime.block_on(async {
        let mut client = seglog_broker::wire::Client::connect(bootstrap)
            .await
            .with_context(|| format!("cannot connect to {bootstrap}"))?;
        client.send(&request, 5).await.with_context(|| format!("CreateTopics to {bootstrap}"))
    })?;
    let result = response.topics.first().context("the broker answered no topic")?;
    if result.error_code != 0 {
        let name = kafka_protocol::ResponseError::try_from_code(result.error_code)
            .map_or_else(|| format!("error {}", result.error_code), |e| format!("{e:?}"));
        let message = result.error_message.as_ref().map_or("", |m| m.as_str());
        anyhow::bail!("cannot create topic {topic}: {name}: {message}");
    }
    Ok(format!(
        "created topic {topic} with {} partitions and replication factor {}",
        result.num_partitions, result.replication_factor
    ))
}

/// `seglog topics describe`: one line per partition, and with `--bucket` its remote part.
fn describe(
    dirs: &[std::path::PathBuf],
    topic: Option<&String>,
    bucket: &crate::remote::RemoteArgs,
    out: &mut impl Write,
) -> Result<()> {
    let (manager, _) = open_existing(dirs)?;
    let remote = match bucket.open()? {
        Some(store) => {
            let runtime = crate::remote::runtime()?;
            Some(crate::remote::manifests(store.as_ref(), &bucket.prefix, &runtime)?)
        }
        None => None,
    };
    let remote_header = if remote.is_some() {
        "\tLOCAL_LOG_START_OFFSET\tREMOTE_LOG_START_OFFSET\tREMOTE_END_OFFSET\tREMOTE_SIZE_BYTES\tREMOTE_SEGMENTS"
    } else {
        ""
    };
    writeln!(
        out,
        "TOPIC\tPARTITION\tLOG_START_OFFSET\tLOG_END_OFFSET\tSIZE_BYTES\tSEGMENTS\tFIRST_TIMESTAMP\tMAX_TIMESTAMP\tDURABILITY\tDIRTY_RATIO\tCLEANER\tLAST_STABLE_OFFSET\tOPEN_TRANSACTIONS{remote_header}"
    )?;
    for tp in manager.partitions() {
        if topic.is_some_and(|topic| *topic != tp.topic) {
            continue;
        }
        let log = manager.get_log(&tp)?;
        let first = log
            .fetch_offset_by_timestamp(0)?
            .map_or_else(|| "-".to_owned(), |found| found.timestamp.to_string());
        let max = log
            .fetch_offset_by_timestamp(MAX_TIMESTAMP)?
            .map_or_else(|| "-".to_owned(), |found| found.timestamp.to_string());
        // For compacted topics: the dirty ratio and where the cleaner stands.
        let (dirty, cleaner) = match manager.partition_cleaner_state(&tp)? {
            None => ("-".to_owned(), "-".to_owned()),
            Some(state) => (
                format!("{:.3}", state.dirty_ratio),
                match (&state.uncleanable, state.state) {
                    (Some(reason), _) => format!("uncleanable: {reason}"),
                    (None, Some(state)) => format!("{state:?}").to_lowercase(),
                    (None, None) => format!(
                        "idle, dirty from {} to {}",
                        state.first_dirty_offset, state.first_uncleanable_offset
                    ),
                },
            ),
        };
        // Transactions: the last stable offset, and each open transaction as
        // `<producer id>@<first offset>`.
        let open: Vec<String> = log
            .active_producers()?
            .iter()
            .filter(|producer| producer.current_txn_start_offset >= 0)
            .map(|producer| {
                format!("{}@{}", producer.producer_id, producer.current_txn_start_offset)
            })
            .collect();
        let open = if open.is_empty() { "-".to_owned() } else { open.join(",") };
        // Tiered storage: the local part, and the remote part from the manifest.
        let remote_columns = match &remote {
            None => String::new(),
            Some(manifests) => {
                let local_start = log.local_log_start_offset()?;
                match manifests.get(&(tp.topic.clone(), tp.partition)) {
                    Some(m) => format!(
                        "\t{local_start}\t{}\t{}\t{}\t{}",
                        m.log_start_offset,
                        m.end_offset(),
                        m.segments.iter().map(|entry| entry.log_bytes).sum::<u64>(),
                        m.segments.len()
                    ),
                    None => format!("\t{local_start}\t-\t-\t-\t-"),
                }
            }
        };
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}\t{first}\t{max}\t{}\t{dirty}\t{cleaner}\t{}\t{open}{remote_columns}",
            tp.topic,
            tp.partition,
            log.log_start_offset()?,
            log.log_end_offset()?,
            log.size_bytes()?,
            log.segment_base_offsets()?.len(),
            log.config()?.durability,
            log.last_stable_offset()?
        )?;
    }
    manager.shutdown()?;

    Ok(())
}
