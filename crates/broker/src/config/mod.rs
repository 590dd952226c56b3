//! The broker's settings (Kafka's `KafkaConfig`, the part a single-node broker uses): Kafka's
//! key names from `server.properties`, with Kafka's defaults where Kafka has them and seglog's
//! embedded defaults (`127.0.0.1:9092`, `./seglog-data`, `node.id=1`) where Kafka has none.

pub(crate) mod dynamic;
pub mod listeners;
pub mod remote;
pub mod security;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use seglog_storage::config::{
    BrokerLogConfig, ConfigError, ConfigValue, Reader, Validator, parse_properties,
};

use crate::group::GroupConfig;
pub use listeners::{Listener, SecurityProtocol};
pub use remote::RemoteStorageConfig;
pub use security::SecurityConfig;

/// `listeners`: where the broker accepts Kafka clients.
pub const LISTENERS: &str = "listeners";
/// `advertised.listeners`: the host and port clients are told to connect to.
pub const ADVERTISED_LISTENERS: &str = "advertised.listeners";
/// `node.id` (KRaft) or `broker.id` (ZooKeeper era).
pub const NODE_ID: &str = "node.id";
/// The ZooKeeper-era synonym of `node.id`.
pub const BROKER_ID: &str = "broker.id";
/// `auto.create.topics.enable`.
pub const AUTO_CREATE_TOPICS_ENABLE: &str = "auto.create.topics.enable";
/// `socket.request.max.bytes`: the largest request frame accepted.
pub const SOCKET_REQUEST_MAX_BYTES: &str = "socket.request.max.bytes";
/// `max.connections`: connections accepted at once.
pub const MAX_CONNECTIONS: &str = "max.connections";
/// `queued.max.requests`: requests read ahead of processing, per connection in seglog.
pub const QUEUED_MAX_REQUESTS: &str = "queued.max.requests";
/// `seglog.metrics.listener`: where `/metrics` is served (`host:port`; empty turns it off).
pub const METRICS_LISTENER: &str = "seglog.metrics.listener";
/// `seglog.metrics.partitions.max`: how many partitions `/metrics` shows one by one (the
/// largest); every topic is shown summed.
pub const METRICS_PARTITIONS_MAX: &str = "seglog.metrics.partitions.max";
/// `replica.fetch.wait.max.ms`-like bound on how long a Fetch may wait, whatever it asks.
pub const FETCH_MAX_WAIT_MS: &str = "seglog.fetch.max.wait.ms";
/// `max.incremental.fetch.session.cache.slots`: KIP-227 fetch sessions held at most (0: off).
pub const FETCH_SESSION_CACHE_SLOTS: &str = "max.incremental.fetch.session.cache.slots";

/// `seglog.topic.partitions.max`: the most partitions one topic may have (CreateTopics,
/// CreatePartitions), so that one request cannot fill the disk with directories.
pub const TOPIC_PARTITIONS_MAX: &str = "seglog.topic.partitions.max";

/// `offsets.topic.num.partitions`.
pub const OFFSETS_TOPIC_NUM_PARTITIONS: &str = "offsets.topic.num.partitions";
/// `transaction.state.log.num.partitions`.
pub const TRANSACTION_STATE_LOG_NUM_PARTITIONS: &str = "transaction.state.log.num.partitions";
/// `transaction.state.log.segment.bytes`.
pub const TRANSACTION_STATE_LOG_SEGMENT_BYTES: &str = "transaction.state.log.segment.bytes";
/// `transaction.max.timeout.ms`.
pub const TRANSACTION_MAX_TIMEOUT_MS: &str = "transaction.max.timeout.ms";
/// `transactional.id.expiration.ms`.
pub const TRANSACTIONAL_ID_EXPIRATION_MS: &str = "transactional.id.expiration.ms";
/// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
pub const TRANSACTION_ABORT_TIMED_OUT_INTERVAL_MS: &str =
    "transaction.abort.timed.out.transaction.cleanup.interval.ms";
/// `transaction.remove.expired.transaction.cleanup.interval.ms`.
pub const TRANSACTION_REMOVE_EXPIRED_INTERVAL_MS: &str =
    "transaction.remove.expired.transaction.cleanup.interval.ms";
/// `offsets.topic.segment.bytes`.
pub const OFFSETS_TOPIC_SEGMENT_BYTES: &str = "offsets.topic.segment.bytes";
/// `group.initial.rebalance.delay.ms`.
pub const GROUP_INITIAL_REBALANCE_DELAY_MS: &str = "group.initial.rebalance.delay.ms";
/// `group.min.session.timeout.ms`.
pub const GROUP_MIN_SESSION_TIMEOUT_MS: &str = "group.min.session.timeout.ms";
/// `group.max.session.timeout.ms`.
pub const GROUP_MAX_SESSION_TIMEOUT_MS: &str = "group.max.session.timeout.ms";
/// `offset.metadata.max.bytes`.
pub const OFFSET_METADATA_MAX_BYTES: &str = "offset.metadata.max.bytes";
/// `offsets.retention.minutes`.
pub const OFFSETS_RETENTION_MINUTES: &str = "offsets.retention.minutes";
/// `group.consumer.heartbeat.interval.ms` (KIP-848 groups).
pub const GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS: &str = "group.consumer.heartbeat.interval.ms";
/// `group.consumer.session.timeout.ms` (KIP-848 groups).
pub const GROUP_CONSUMER_SESSION_TIMEOUT_MS: &str = "group.consumer.session.timeout.ms";

/// The default listener.
pub const LISTENER_DEFAULT: &str = "127.0.0.1:9092";
/// The default metrics listener (the port `kafka_exporter` uses).
pub const METRICS_LISTENER_DEFAULT: &str = "127.0.0.1:9308";

/// Everything the broker runs with (Kafka's `KafkaConfig`, broker subset).
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerConfig {
    /// The listeners (`listeners`, `advertised.listeners`, `listener.security.protocol.map`),
    /// at least one.
    pub listeners: Vec<Listener>,
    /// TLS, SASL, the authorizer and quotas.
    pub security: SecurityConfig,
    /// `node.id`.
    pub node_id: i32,
    /// `auto.create.topics.enable` (true).
    pub auto_create_topics: bool,
    /// `socket.request.max.bytes` (104857600).
    pub socket_request_max_bytes: u32,
    /// `max.connections` (Kafka: `Int.MAX`; seglog: 1000, so memory stays bounded).
    pub max_connections: u32,
    /// `queued.max.requests` (500): requests buffered per connection before reading pauses.
    pub queued_max_requests: u32,
    /// Where `/metrics` is served; `None` turns it off.
    pub metrics_listener: Option<SocketAddr>,
    /// The web console (`seglog.console.*`).
    pub console: crate::console::ConsoleConfig,
    /// The partitions `/metrics` shows one by one, the largest first
    /// (`seglog.metrics.partitions.max`, 1000; 0 shows none): a scrape of 100,000 partitions
    /// stays a few hundred kilobytes.
    pub metrics_partitions_max: u32,
    /// The longest a Fetch waits for `min.bytes` (`seglog.fetch.max.wait.ms`, 30000).
    pub fetch_wait_max_ms: u64,
    /// KIP-227 fetch sessions held at most (`max.incremental.fetch.session.cache.slots`,
    /// 1000, as Kafka; 0 turns sessions off).
    pub fetch_session_cache_slots: u32,
    /// The most partitions one topic may have (`seglog.topic.partitions.max`, 10000).
    pub topic_partitions_max: i32,
    /// The storage settings: `log.dirs`, `num.partitions`, the topic defaults.
    pub log: BrokerLogConfig,
    /// The group coordinator's settings (`offsets.topic.*`, `group.*`).
    pub groups: GroupConfig,
    /// The transaction coordinator's settings.
    pub txns: crate::txn::TxnConfig,
    /// Tiered storage: the bucket and the tiering task's settings.
    pub remote: RemoteStorageConfig,
    /// A cluster's replication (`replica.*`, `num.replica.fetchers`, `default.replication.factor`).
    pub replication: crate::replication::ReplicationConfig,
    /// The keys as given (`server.properties` and overrides), so that DescribeConfigs can tell
    /// a set key (STATIC_BROKER_CONFIG) from a default.
    pub properties: BTreeMap<String, String>,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            listeners: vec![Listener {
                name: "PLAINTEXT".to_owned(),
                protocol: SecurityProtocol::Plaintext,
                bind: SocketAddr::from(([127, 0, 0, 1], 9092)),
                advertised_host: None,
                advertised_port: None,
            }],
            security: SecurityConfig::default(),
            node_id: 1,
            auto_create_topics: true,
            socket_request_max_bytes: 104_857_600,
            max_connections: 1000,
            queued_max_requests: 500,
            metrics_listener: METRICS_LISTENER_DEFAULT.parse().ok(),
            console: crate::console::ConsoleConfig::default(),
            metrics_partitions_max: 1000,
            fetch_wait_max_ms: 30_000,
            fetch_session_cache_slots: 1000,
            topic_partitions_max: 10_000,
            log: BrokerLogConfig {
                log_dirs: vec!["./seglog-data".into()],
                ..BrokerLogConfig::default()
            },
            groups: GroupConfig::default(),
            txns: crate::txn::TxnConfig::default(),
            remote: RemoteStorageConfig::default(),
            replication: crate::replication::ReplicationConfig::default(),
            properties: BTreeMap::new(),
        }
    }
}

/// A `host:port` (an empty host means all interfaces, as in Kafka).
fn parse_host_port(key: &str, value: &str, address: &str) -> Result<(String, u16), ConfigError> {
    let Some((host, port)) = address.rsplit_once(':') else {
        return Err(ConfigError::invalid(key, value, format!("{address:?} is not host:port")));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| ConfigError::invalid(key, value, format!("port {port:?} is not 0-65535")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_owned(), port))
}

/// A `seglog.metrics.listener` value: `host:port`, or one `PLAINTEXT://host:port`.
fn parse_listener(key: &str, value: &str) -> Result<(String, u16), ConfigError> {
    let address = value.trim();
    let address = address.split_once("://").map_or(address, |(_, rest)| rest);
    parse_host_port(key, value, address)
}

fn resolve(key: &str, value: &str, host: &str, port: u16) -> Result<SocketAddr, ConfigError> {
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    let host = if host == "localhost" { "127.0.0.1" } else { host };
    format!("{host}:{port}").parse().or_else(|_| {
        format!("[{host}]:{port}").parse().map_err(|_| {
            ConfigError::invalid(key, value, format!("{host:?} is not an IP address or localhost"))
        })
    })
}

/// A number of at least `at_least`, through storage's one `ConfigDef`-style parser.
/// The transaction coordinator's keys (Kafka's `TransactionLogConfig` and
/// `TransactionStateManagerConfig`), with their lower bounds.
fn txn_config(
    properties: &BTreeMap<String, String>,
    defaults: &crate::txn::TxnConfig,
) -> Result<crate::txn::TxnConfig, ConfigError> {
    Ok(crate::txn::TxnConfig {
        state_log_partitions: parse_number(
            properties,
            TRANSACTION_STATE_LOG_NUM_PARTITIONS,
            defaults.state_log_partitions,
            1,
        )?,
        state_log_segment_bytes: parse_number(
            properties,
            TRANSACTION_STATE_LOG_SEGMENT_BYTES,
            defaults.state_log_segment_bytes,
            1,
        )?,
        max_timeout_ms: parse_number(
            properties,
            TRANSACTION_MAX_TIMEOUT_MS,
            defaults.max_timeout_ms,
            1,
        )?,
        id_expiration_ms: parse_number(
            properties,
            TRANSACTIONAL_ID_EXPIRATION_MS,
            defaults.id_expiration_ms,
            1,
        )?,
        abort_timed_out_interval_ms: parse_number(
            properties,
            TRANSACTION_ABORT_TIMED_OUT_INTERVAL_MS,
            defaults.abort_timed_out_interval_ms,
            1,
        )?,
        remove_expired_interval_ms: parse_number(
            properties,
            TRANSACTION_REMOVE_EXPIRED_INTERVAL_MS,
            defaults.remove_expired_interval_ms,
            1,
        )?,
    })
}

fn parse_number<T>(
    properties: &BTreeMap<String, String>,
    key: &str,
    default: T,
    at_least: T,
) -> Result<T, ConfigError>
where
    T: ConfigValue + Copy + TryInto<i64>,
{
    let min = at_least.try_into().unwrap_or(i64::MAX);
    Reader::new(properties).value(key, &default, Validator::AtLeast(min))
}

/// The group coordinator's keys, with Kafka's lower bounds.
fn group_config(
    properties: &BTreeMap<String, String>,
    defaults: &GroupConfig,
) -> Result<GroupConfig, ConfigError> {
    let retention_minutes: i64 = parse_number(
        properties,
        OFFSETS_RETENTION_MINUTES,
        defaults.offsets_retention_ms / 60_000,
        1,
    )?;
    let groups = GroupConfig {
        offsets_topic_partitions: parse_number(
            properties,
            OFFSETS_TOPIC_NUM_PARTITIONS,
            defaults.offsets_topic_partitions,
            1,
        )?,
        offsets_topic_segment_bytes: parse_number(
            properties,
            OFFSETS_TOPIC_SEGMENT_BYTES,
            defaults.offsets_topic_segment_bytes,
            1,
        )?,
        initial_rebalance_delay_ms: parse_number(
            properties,
            GROUP_INITIAL_REBALANCE_DELAY_MS,
            defaults.initial_rebalance_delay_ms,
            0,
        )?,
        min_session_timeout_ms: parse_number(
            properties,
            GROUP_MIN_SESSION_TIMEOUT_MS,
            defaults.min_session_timeout_ms,
            0,
        )?,
        max_session_timeout_ms: parse_number(
            properties,
            GROUP_MAX_SESSION_TIMEOUT_MS,
            defaults.max_session_timeout_ms,
            0,
        )?,
        offset_metadata_max_bytes: parse_number(
            properties,
            OFFSET_METADATA_MAX_BYTES,
            defaults.offset_metadata_max_bytes,
            0,
        )?,
        offsets_retention_ms: retention_minutes.saturating_mul(60_000),
        consumer_heartbeat_interval_ms: parse_number(
            properties,
            GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS,
            defaults.consumer_heartbeat_interval_ms,
            1,
        )?,
        consumer_session_timeout_ms: parse_number(
            properties,
            GROUP_CONSUMER_SESSION_TIMEOUT_MS,
            defaults.consumer_session_timeout_ms,
            1,
        )?,
    };
    if groups.min_session_timeout_ms > groups.max_session_timeout_ms {
        return Err(ConfigError::invalid(
            GROUP_MIN_SESSION_TIMEOUT_MS,
            &groups.min_session_timeout_ms.to_string(),
            "must not exceed group.max.session.timeout.ms",
        ));
    }
    Ok(groups)
}

impl BrokerConfig {
    /// Builds the settings from `server.properties` keys; unknown keys are ignored, as Kafka
    /// logs and ignores them. `log.dirs` defaults to `./seglog-data` (not Kafka's
    /// `/tmp/kafka-logs`).
    pub fn from_properties(properties: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let defaults = Self::default();
        let mut log = BrokerLogConfig::from_properties(properties)?;
        if !properties.contains_key("log.dirs") && !properties.contains_key("log.dir") {
            log.log_dirs.clone_from(&defaults.log.log_dirs);
        }
        let listeners = listeners::parse_listeners(properties, LISTENER_DEFAULT)?;
        let security = security::security_config(properties, &listeners)?;
        let node_id = match (properties.get(NODE_ID), properties.get(BROKER_ID)) {
            (Some(_), _) => parse_number(properties, NODE_ID, 1, 0)?,
            (None, Some(_)) => parse_number(properties, BROKER_ID, 1, 0)?,
            (None, None) => defaults.node_id,
        };
        let auto_create_topics = Reader::new(properties).value(
            AUTO_CREATE_TOPICS_ENABLE,
            &defaults.auto_create_topics,
            Validator::Any,
        )?;
        let http_listener = |key: &str, default: Option<SocketAddr>| match properties.get(key) {
            None => Ok(default),
            Some(value) if value.trim().is_empty() => Ok(None),
            Some(value) => {
                let (host, port) = parse_listener(key, value)?;
                resolve(key, value, &host, port).map(Some)
            }
        };
        let metrics_listener = http_listener(METRICS_LISTENER, defaults.metrics_listener)?;
        let console = crate::console::ConsoleConfig {
            listener: http_listener(crate::console::CONSOLE_LISTENER, defaults.console.listener)?,
            actions_enable: Reader::new(properties).value(
                crate::console::CONSOLE_ACTIONS_ENABLE,
                &defaults.console.actions_enable,
                Validator::Any,
            )?,
            sample_interval_ms: parse_number(
                properties,
                crate::console::CONSOLE_SAMPLE_INTERVAL_MS,
                defaults.console.sample_interval_ms,
                10,
            )?,
        };
        log.node_id = Some(node_id);
        let groups = group_config(properties, &defaults.groups)?;
        let txns = txn_config(properties, &defaults.txns)?;
        Ok(Self {
            listeners,
            security,
            node_id,
            auto_create_topics,
            socket_request_max_bytes: parse_number(
                properties,
                SOCKET_REQUEST_MAX_BYTES,
                defaults.socket_request_max_bytes,
                1,
            )?,
            max_connections: parse_number(
                properties,
                MAX_CONNECTIONS,
                defaults.max_connections,
                1,
            )?,
            queued_max_requests: parse_number(
                properties,
                QUEUED_MAX_REQUESTS,
                defaults.queued_max_requests,
                1,
            )?,
            metrics_listener,
            console,
            metrics_partitions_max: parse_number(
                properties,
                METRICS_PARTITIONS_MAX,
                defaults.metrics_partitions_max,
                0,
            )?,
            fetch_wait_max_ms: parse_number(
                properties,
                FETCH_MAX_WAIT_MS,
                defaults.fetch_wait_max_ms,
                0,
            )?,
            fetch_session_cache_slots: parse_number(
                properties,
                FETCH_SESSION_CACHE_SLOTS,
                defaults.fetch_session_cache_slots,
                0,
            )?,
            topic_partitions_max: parse_number(
                properties,
                TOPIC_PARTITIONS_MAX,
                defaults.topic_partitions_max,
                1,
            )?,
            groups,
            txns,
            remote: remote::remote_storage_config(properties)?,
            replication: crate::replication::replication_config(properties, &log)?,
            log,
            properties: properties.clone(),
        })
    }

    /// Parses `server.properties` text and builds the settings from it.
    pub fn from_server_properties(text: &str) -> Result<Self, ConfigError> {
        Self::from_properties(&parse_properties(text)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn embedded_defaults() {
        let config = BrokerConfig::from_properties(&BTreeMap::new()).expect("defaults parse");
        assert_eq!(config.listeners[0].bind.to_string(), "127.0.0.1:9092");
        assert_eq!(config.node_id, 1);
        assert!(config.auto_create_topics);
        assert_eq!(config.log.log_dirs, vec![std::path::PathBuf::from("./seglog-data")]);
        assert_eq!(config.log.n_partitions, 1);
        assert_eq!(config.socket_request_max_bytes, 100 << 20);
    }

    #[test]
    fn kafka_keys() {
        let config = BrokerConfig::from_properties(&props(&[
            ("listeners", "PLAINTEXT://localhost:19092"),
            ("advertised.listeners", "PLAINTEXT://kafka.example:9092"),
            ("broker.id", "7"),
            ("num.partitions", "3"),
            ("log.dirs", "/srv/a,/srv/b"),
            ("auto.create.topics.enable", "false"),
            ("socket.request.max.bytes", "1024"),
            ("seglog.metrics.listener", ""),
        ]))
        .expect("parses");
        assert_eq!(config.listeners[0].bind.to_string(), "127.0.0.1:19092");
        assert_eq!(config.listeners[0].advertised_host.as_deref(), Some("kafka.example"));
        assert_eq!(config.listeners[0].advertised_port, Some(9092));
        assert_eq!(config.node_id, 7);
        assert_eq!(config.log.n_partitions, 3);
        assert_eq!(config.log.log_dirs.len(), 2);
        assert!(!config.auto_create_topics);
        assert_eq!(config.socket_request_max_bytes, 1024);
        assert_eq!(config.metrics_listener, None);
    }

    #[test]
    fn bad_values_name_the_key() {
        let error = BrokerConfig::from_properties(&props(&[("listeners", "SSL://0.0.0.0:9093")]))
            .expect_err("SSL needs a keystore");
        assert!(error.to_string().contains("ssl.keystore.location"), "{error}");
        let error =
            BrokerConfig::from_properties(&props(&[("node.id", "x")])).expect_err("not a number");
        assert!(error.to_string().contains("node.id"), "{error}");
    }
}
