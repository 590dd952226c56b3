//! The broker's config listing for DescribeConfigs (Kafka's `ConfigHelper.describeConfigs` for
//! a BROKER resource): every key of Kafka 4.x's `KafkaConfig` that clients and tools read, each
//! with its value, source, type and synonyms. Keys seglog honours show the value it runs with;
//! keys it accepts but does not act on (replication, KRaft, ...) show Kafka's default
//! and say so in their documentation. Dynamic values (`config/dynamic.rs`) come first; a key
//! is read-only unless a dynamic update of it is taken ([`accepts_dynamic_update`]).

use std::borrow::Cow;

use seglog_storage::config::{ConfigType as Type, TOPIC_CONFIGS, Unit};

use super::configs::{ConfigEntry, SOURCE_DEFAULT_CONFIG};
use crate::config::BrokerConfig;
use crate::config::dynamic::{self, DynamicConfigs};
use crate::replication::quota::RATE_KEYS;

/// Kafka's `ConfigSource` for a key set in `server.properties` (or an override flag).
const SOURCE_STATIC_BROKER_CONFIG: i8 = 4;
/// Kafka's `ConfigSource` for a key set dynamically for this broker (`DescribeConfigsResponse`'s
/// id; 1 is TOPIC_CONFIG).
const SOURCE_DYNAMIC_BROKER_CONFIG: i8 = 2;
/// Kafka's `ConfigSource` for a key set dynamically for every broker.
const SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;

/// How seglog treats a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Honoured: the value seglog runs with, from its parsed configuration.
    Live,
    /// Honoured through a precedence of several keys (`log.retention.ms`, `.minutes`,
    /// `.hours`), or read by a cluster's node (the KRaft keys, `inter.broker.listener.name`):
    /// the value as given, else Kafka's default.
    AsGiven,
    /// Accepted and not acted on: the value as given, else Kafka's default.
    Ignored,
}

/// One broker key: name, type, Kafka's default (`None` where Kafka's is null), how seglog
/// treats it.
type Key = (&'static str, Type, Option<&'static str>, Use);

/// A broker key of the listing: [`KEYS`], or the broker synonym of a topic key.
#[derive(Debug, Clone)]
struct ListedKey {
    name: &'static str,
    config_type: Type,
    kafka_default: Option<Cow<'static, str>>,
    usage: Use,
}

const LONG_MAX: &str = "9223372036854775807";
const INT_MAX: &str = "2147483647";

/// Kafka 4.x's broker keys (`KafkaConfig`, `ServerLogConfigs`, `GroupCoordinatorConfig`,
/// `TransactionLogConfig`, `ReplicationConfigs`, `SocketServerConfigs`, `QuotaConfig`,
/// `KRaftConfigs`, `SslConfigs`, `SaslConfigs`), in name order, and seglog's own, except the
/// one-to-one broker synonyms of topic keys (`log.segment.bytes`, `compression.type`, ...),
/// which come from storage's [`TOPIC_CONFIGS`]. The time keys with several units
/// (`log.retention.ms`/`.minutes`/`.hours`) are here for their Kafka defaults.
#[rustfmt::skip]
const KEYS: &[Key] = &[
    ("advertised.listeners", Type::String, None, Use::Live),
    ("allow.everyone.if.no.acl.found", Type::Boolean, Some("false"), Use::AsGiven),
    ("authorizer.class.name", Type::String, Some(""), Use::AsGiven),
    ("auto.create.topics.enable", Type::Boolean, Some("true"), Use::Live),
    ("auto.leader.rebalance.enable", Type::Boolean, Some("true"), Use::Ignored),
    ("background.threads", Type::Int, Some("10"), Use::Ignored),
    ("broker.heartbeat.interval.ms", Type::Int, Some("2000"), Use::AsGiven),
    ("broker.id", Type::Int, Some("-1"), Use::Live),
    ("broker.rack", Type::String, None, Use::AsGiven),
    ("broker.session.timeout.ms", Type::Int, Some("9000"), Use::AsGiven),
    ("connection.failed.authentication.delay.ms", Type::Int, Some("100"), Use::AsGiven),
    ("connections.max.idle.ms", Type::Long, Some("600000"), Use::Ignored),
    ("connections.max.reauth.ms", Type::Long, Some("0"), Use::AsGiven),
    ("controlled.shutdown.enable", Type::Boolean, Some("true"), Use::Ignored),
    ("controller.listener.names", Type::String, None, Use::AsGiven),
    ("controller.quorum.bootstrap.servers", Type::List, Some(""), Use::AsGiven),
    ("controller.quorum.election.backoff.max.ms", Type::Int, Some("1000"), Use::Ignored),
    ("controller.quorum.election.timeout.ms", Type::Int, Some("1000"), Use::AsGiven),
    ("controller.quorum.fetch.timeout.ms", Type::Int, Some("2000"), Use::Ignored),
    ("controller.quorum.voters", Type::List, Some(""), Use::AsGiven),
    ("default.replication.factor", Type::Int, Some("1"), Use::AsGiven),
    ("delete.records.purgatory.purge.interval.requests", Type::Int, Some("1"), Use::Ignored),
    ("delete.topic.enable", Type::Boolean, Some("true"), Use::Ignored),
    ("eligible.leader.replicas.enable", Type::Boolean, Some("false"), Use::Live),
    ("fetch.max.bytes", Type::Int, Some("57671680"), Use::Ignored),
    ("fetch.purgatory.purge.interval.requests", Type::Int, Some("1000"), Use::Ignored),
    ("group.consumer.assignors", Type::List, Some("uniform,range"), Use::Ignored),
    ("group.consumer.heartbeat.interval.ms", Type::Int, Some("5000"), Use::Live),
    ("group.consumer.max.heartbeat.interval.ms", Type::Int, Some("15000"), Use::Ignored),
    ("group.consumer.max.session.timeout.ms", Type::Int, Some("60000"), Use::Ignored),
    ("group.consumer.max.size", Type::Int, Some(INT_MAX), Use::Ignored),
    ("group.consumer.min.heartbeat.interval.ms", Type::Int, Some("5000"), Use::Ignored),
    ("group.consumer.min.session.timeout.ms", Type::Int, Some("45000"), Use::Ignored),
    ("group.consumer.session.timeout.ms", Type::Int, Some("45000"), Use::Live),
    ("group.coordinator.rebalance.protocols", Type::List, Some("classic,consumer"), Use::Ignored),
    ("group.coordinator.threads", Type::Int, Some("4"), Use::Ignored),
    ("group.initial.rebalance.delay.ms", Type::Int, Some("3000"), Use::Live),
    ("group.max.session.timeout.ms", Type::Int, Some("1800000"), Use::Live),
    ("group.max.size", Type::Int, Some(INT_MAX), Use::Ignored),
    ("group.min.session.timeout.ms", Type::Int, Some("6000"), Use::Live),
    ("initial.broker.registration.timeout.ms", Type::Int, Some("60000"), Use::Ignored),
    ("inter.broker.listener.name", Type::String, None, Use::AsGiven),
    ("leader.imbalance.check.interval.seconds", Type::Long, Some("300"), Use::Ignored),
    ("leader.imbalance.per.broker.percentage", Type::Int, Some("10"), Use::Ignored),
    ("listener.security.protocol.map", Type::String, Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"), Use::AsGiven),
    ("listeners", Type::String, Some("PLAINTEXT://:9092"), Use::Live),
    ("log.cleaner.backoff.ms", Type::Long, Some("15000"), Use::Live),
    ("log.cleaner.dedupe.buffer.size", Type::Long, Some("134217728"), Use::Live),
    ("log.cleaner.enable", Type::Boolean, Some("true"), Use::Live),
    ("log.cleaner.io.buffer.load.factor", Type::Double, Some("0.9"), Use::AsGiven),
    ("log.cleaner.io.buffer.size", Type::Int, Some("524288"), Use::Live),
    ("log.cleaner.io.max.bytes.per.second", Type::Double, Some("1.7976931348623157E308"), Use::AsGiven),
    ("log.cleaner.threads", Type::Int, Some("1"), Use::Live),
    ("log.dir", Type::String, Some("/tmp/kafka-logs"), Use::AsGiven),
    ("log.dir.failure.timeout.ms", Type::Long, Some("30000"), Use::Ignored),
    ("log.dirs", Type::String, None, Use::Live),
    ("log.flush.interval.ms", Type::Long, None, Use::AsGiven),
    ("log.flush.offset.checkpoint.interval.ms", Type::Int, Some("60000"), Use::Live),
    ("log.flush.scheduler.interval.ms", Type::Long, Some(LONG_MAX), Use::Live),
    ("log.flush.start.offset.checkpoint.interval.ms", Type::Int, Some("60000"), Use::Live),
    ("log.initial.task.delay.ms", Type::Long, Some("30000"), Use::Ignored),
    ("log.retention.check.interval.ms", Type::Long, Some("300000"), Use::Live),
    ("log.retention.hours", Type::Int, Some("168"), Use::AsGiven),
    ("log.retention.minutes", Type::Int, None, Use::AsGiven),
    ("log.retention.ms", Type::Long, None, Use::AsGiven),
    ("log.roll.hours", Type::Int, Some("168"), Use::AsGiven),
    ("log.roll.jitter.hours", Type::Int, Some("0"), Use::AsGiven),
    ("log.roll.jitter.ms", Type::Long, None, Use::AsGiven),
    ("log.roll.ms", Type::Long, None, Use::AsGiven),
    ("max.connection.creation.rate", Type::Int, Some(INT_MAX), Use::Ignored),
    ("max.connections", Type::Int, Some(INT_MAX), Use::Live),
    ("max.connections.per.ip", Type::Int, Some(INT_MAX), Use::AsGiven),
    ("max.connections.per.ip.overrides", Type::String, Some(""), Use::AsGiven),
    ("max.incremental.fetch.session.cache.slots", Type::Int, Some("1000"), Use::Live),
    ("metadata.log.dir", Type::String, None, Use::AsGiven),
    ("metadata.log.max.record.bytes.between.snapshots", Type::Long, Some("20971520"), Use::AsGiven),
    ("metadata.log.segment.bytes", Type::Int, Some("1073741824"), Use::Ignored),
    ("metadata.max.retention.bytes", Type::Long, Some("104857600"), Use::Ignored),
    ("metadata.max.retention.ms", Type::Long, Some("604800000"), Use::Ignored),
    ("metric.reporters", Type::List, Some(""), Use::Ignored),
    ("node.id", Type::Int, Some("-1"), Use::Live),
    ("num.io.threads", Type::Int, Some("8"), Use::Ignored),
    ("num.network.threads", Type::Int, Some("3"), Use::Ignored),
    ("num.partitions", Type::Int, Some("1"), Use::Live),
    ("num.recovery.threads.per.data.dir", Type::Int, Some("2"), Use::Live),
    ("num.replica.alter.log.dirs.threads", Type::Int, None, Use::Ignored),
    ("num.replica.fetchers", Type::Int, Some("1"), Use::AsGiven),
    ("offset.metadata.max.bytes", Type::Int, Some("4096"), Use::Live),
    ("offsets.commit.timeout.ms", Type::Int, Some("5000"), Use::Ignored),
    ("offsets.load.buffer.size", Type::Int, Some("5242880"), Use::Ignored),
    ("offsets.retention.check.interval.ms", Type::Long, Some("600000"), Use::Ignored),
    ("offsets.retention.minutes", Type::Int, Some("10080"), Use::Live),
    ("offsets.topic.compression.codec", Type::Int, Some("0"), Use::Ignored),
    ("offsets.topic.num.partitions", Type::Int, Some("50"), Use::Live),
    ("offsets.topic.replication.factor", Type::Short, Some("3"), Use::AsGiven),
    ("offsets.topic.segment.bytes", Type::Int, Some("104857600"), Use::Live),
    ("principal.builder.class", Type::Class, Some("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"), Use::Ignored),
    ("process.roles", Type::List, Some(""), Use::AsGiven),
    ("producer.id.expiration.check.interval.ms", Type::Int, Some("600000"), Use::Ignored),
    ("producer.id.expiration.ms", Type::Int, Some("86400000"), Use::Ignored),
    ("producer.purgatory.purge.interval.requests", Type::Int, Some("1000"), Use::Ignored),
    ("queued.max.request.bytes", Type::Long, Some("-1"), Use::Ignored),
    ("queued.max.requests", Type::Int, Some("500"), Use::Live),
    ("quota.window.num", Type::Int, Some("11"), Use::AsGiven),
    ("quota.window.size.seconds", Type::Int, Some("1"), Use::AsGiven),
    ("remote.fetch.max.wait.ms", Type::Int, Some("500"), Use::AsGiven),
    ("remote.log.index.file.cache.total.size.bytes", Type::Long, Some("1073741824"), Use::AsGiven),
    ("remote.log.manager.copy.max.bytes.per.second", Type::Long, Some(LONG_MAX), Use::AsGiven),
    ("remote.log.manager.task.interval.ms", Type::Long, Some("30000"), Use::AsGiven),
    ("remote.log.manager.task.retry.backoff.max.ms", Type::Long, Some("30000"), Use::AsGiven),
    ("remote.log.manager.task.retry.backoff.ms", Type::Long, Some("500"), Use::AsGiven),
    ("remote.log.storage.system.enable", Type::Boolean, Some("false"), Use::AsGiven),
    ("replica.fetch.backoff.ms", Type::Int, Some("1000"), Use::AsGiven),
    ("replica.fetch.max.bytes", Type::Int, Some("1048576"), Use::Live),
    ("replica.fetch.min.bytes", Type::Int, Some("1"), Use::AsGiven),
    ("replica.fetch.response.max.bytes", Type::Int, Some("10485760"), Use::Live),
    ("replica.fetch.wait.max.ms", Type::Int, Some("500"), Use::AsGiven),
    ("replica.high.watermark.checkpoint.interval.ms", Type::Long, Some("5000"), Use::Live),
    ("replica.lag.time.max.ms", Type::Long, Some("30000"), Use::AsGiven),
    ("replica.selector.class", Type::String, None, Use::Ignored),
    ("replica.socket.receive.buffer.bytes", Type::Int, Some("65536"), Use::Ignored),
    ("replica.socket.timeout.ms", Type::Int, Some("30000"), Use::Ignored),
    ("replication.quota.window.num", Type::Int, Some("11"), Use::AsGiven),
    ("replication.quota.window.size.seconds", Type::Int, Some("1"), Use::AsGiven),
    ("request.timeout.ms", Type::Int, Some("30000"), Use::Ignored),
    ("reserved.broker.max.id", Type::Int, Some("1000"), Use::Ignored),
    ("sasl.enabled.mechanisms", Type::List, Some("GSSAPI"), Use::Live),
    ("sasl.jaas.config", Type::Password, None, Use::AsGiven),
    ("sasl.mechanism.controller.protocol", Type::String, Some("GSSAPI"), Use::Ignored),
    ("sasl.mechanism.inter.broker.protocol", Type::String, Some("GSSAPI"), Use::AsGiven),
    ("sasl.oauthbearer.clock.skew.seconds", Type::Int, Some("30"), Use::AsGiven),
    ("sasl.oauthbearer.expected.audience", Type::List, None, Use::AsGiven),
    ("sasl.oauthbearer.expected.issuer", Type::String, None, Use::AsGiven),
    ("sasl.oauthbearer.jwks.endpoint.url", Type::String, None, Use::AsGiven),
    ("sasl.oauthbearer.scope.claim.name", Type::String, Some("scope"), Use::AsGiven),
    ("sasl.oauthbearer.sub.claim.name", Type::String, Some("sub"), Use::AsGiven),
    ("sasl.server.max.receive.size", Type::Int, Some("524288"), Use::AsGiven),
    ("security.inter.broker.protocol", Type::String, Some("PLAINTEXT"), Use::AsGiven),
    ("seglog.authentication.timeout.ms", Type::Long, Some("10000"), Use::AsGiven),
    ("seglog.console.actions.enable", Type::Boolean, Some("false"), Use::Live),
    ("seglog.console.listener", Type::String, Some("127.0.0.1:9309"), Use::Live),
    ("seglog.console.sample.interval.ms", Type::Long, Some("5000"), Use::Live),
    ("seglog.fetch.max.wait.ms", Type::Long, Some("30000"), Use::Live),
    ("seglog.metrics.listener", Type::String, Some("127.0.0.1:9308"), Use::Live),
    ("seglog.metrics.partitions.max", Type::Int, Some("1000"), Use::Live),
    ("seglog.open.files.max", Type::Int, Some("0"), Use::Live),
    ("seglog.remote.fetch.chunk.bytes", Type::Long, Some("4194304"), Use::AsGiven),
    ("seglog.remote.fetch.chunk.cache.bytes", Type::Long, Some("134217728"), Use::AsGiven),
    ("seglog.remote.storage.allow.http", Type::Boolean, Some("false"), Use::AsGiven),
    ("seglog.remote.storage.bucket", Type::String, None, Use::AsGiven),
    ("seglog.remote.storage.endpoint", Type::String, None, Use::AsGiven),
    ("seglog.remote.storage.prefix", Type::String, Some("seglog"), Use::AsGiven),
    ("seglog.remote.storage.region", Type::String, None, Use::AsGiven),
    ("seglog.sasl.plain.credentials.file", Type::String, None, Use::AsGiven),
    ("seglog.ssl.reload.interval.ms", Type::Long, Some("30000"), Use::AsGiven),
    ("seglog.topic.partitions.max", Type::Int, Some("10000"), Use::Live),
    ("socket.connection.setup.timeout.max.ms", Type::Long, Some("30000"), Use::Ignored),
    ("socket.connection.setup.timeout.ms", Type::Long, Some("10000"), Use::Ignored),
    ("socket.listen.backlog.size", Type::Int, Some("50"), Use::Ignored),
    ("socket.receive.buffer.bytes", Type::Int, Some("102400"), Use::Ignored),
    ("socket.request.max.bytes", Type::Int, Some("104857600"), Use::Live),
    ("socket.send.buffer.bytes", Type::Int, Some("102400"), Use::Ignored),
    ("ssl.client.auth", Type::String, Some("none"), Use::AsGiven),
    ("ssl.enabled.protocols", Type::List, Some("TLSv1.2,TLSv1.3"), Use::AsGiven),
    ("ssl.endpoint.identification.algorithm", Type::String, Some("https"), Use::AsGiven),
    ("ssl.key.password", Type::Password, None, Use::Ignored),
    ("ssl.keystore.certificate.chain", Type::Password, None, Use::AsGiven),
    ("ssl.keystore.key", Type::Password, None, Use::AsGiven),
    ("ssl.keystore.location", Type::String, None, Use::AsGiven),
    ("ssl.keystore.password", Type::Password, None, Use::Ignored),
    ("ssl.keystore.type", Type::String, Some("JKS"), Use::Ignored),
    ("ssl.principal.mapping.rules", Type::String, Some("DEFAULT"), Use::AsGiven),
    ("ssl.protocol", Type::String, Some("TLSv1.3"), Use::Ignored),
    ("ssl.truststore.certificates", Type::Password, None, Use::AsGiven),
    ("ssl.truststore.location", Type::String, None, Use::AsGiven),
    ("ssl.truststore.password", Type::Password, None, Use::Ignored),
    ("ssl.truststore.type", Type::String, Some("JKS"), Use::Ignored),
    ("super.users", Type::String, None, Use::AsGiven),
    ("transaction.abort.timed.out.transaction.cleanup.interval.ms", Type::Int, Some("10000"), Use::Ignored),
    ("transaction.max.timeout.ms", Type::Int, Some("900000"), Use::Ignored),
    ("transaction.remove.expired.transaction.cleanup.interval.ms", Type::Int, Some("3600000"), Use::Ignored),
    ("transaction.state.log.load.buffer.size", Type::Int, Some("5242880"), Use::Ignored),
    ("transaction.state.log.min.isr", Type::Int, Some("2"), Use::AsGiven),
    ("transaction.state.log.num.partitions", Type::Int, Some("50"), Use::Ignored),
    ("transaction.state.log.replication.factor", Type::Short, Some("3"), Use::AsGiven),
    ("transaction.state.log.segment.bytes", Type::Int, Some("104857600"), Use::Ignored),
    ("transactional.id.expiration.ms", Type::Int, Some("604800000"), Use::Ignored),
    ("unclean.leader.election.enable", Type::Boolean, Some("false"), Use::Ignored),
];

/// Keys read in order of precedence for one setting (Kafka's `DynamicBrokerConfig`
/// synonyms): the first that is set wins.
const SYNONYM_GROUPS: [&[&str]; 6] = [
    &["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
    &["log.roll.ms", "log.roll.hours"],
    &["log.roll.jitter.ms", "log.roll.jitter.hours"],
    &["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
    &["log.dirs", "log.dir"],
    &["node.id", "broker.id"],
];

/// One synonym of a described key: its name, value and source.
pub(crate) struct Synonym {
    pub(crate) name: Cow<'static, str>,
    pub(crate) value: Option<String>,
    pub(crate) source: i8,
}

/// A described broker key.
pub(crate) struct BrokerEntry {
    pub(crate) entry: ConfigEntry,
    pub(crate) config_type: i8,
    pub(crate) documentation: Option<&'static str>,
    pub(crate) synonyms: Vec<Synonym>,
    /// Whether AlterConfigs refuses to change it (Kafka: not a dynamic config).
    pub(crate) read_only: bool,
}

/// `names`' dynamic values: this broker's, then the default's, each in order of precedence.
fn dynamic_synonyms(dynamic: &DynamicConfigs, names: &[&'static str]) -> Vec<Synonym> {
    [(true, SOURCE_DYNAMIC_BROKER_CONFIG), (false, SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG)]
        .into_iter()
        .flat_map(|(per_broker, source)| {
            names.iter().filter_map(move |member| {
                let value = dynamic.layer(per_broker).get(*member)?;
                Some(Synonym { name: Cow::Borrowed(*member), value: Some(value.clone()), source })
            })
        })
        .collect()
}

/// Kafka's type of a broker key (`None`: a key Kafka's broker config does not have).
pub(crate) fn broker_key_type(name: &str) -> Option<Type> {
    listed_keys()
        .iter()
        .find(|key| key.name == name)
        .map(|key| key.config_type)
        .or_else(|| RATE_KEYS.contains(&name).then_some(Type::Long))
}

/// Kafka's default of a broker key, as text (APPEND and SUBTRACT start from it).
pub(crate) fn broker_key_kafka_default(name: &str) -> Option<String> {
    let key = listed_keys().iter().find(|key| key.name == name)?;
    key.kafka_default.as_deref().map(str::to_owned)
}

/// Whether seglog acts on `name` (so that a change while it runs would be a lie, except for
/// the topic defaults, which apply live).
pub(crate) fn is_honoured(name: &str) -> bool {
    listed_keys().iter().any(|key| key.name == name && key.usage != Use::Ignored)
}

/// Whether a dynamic update of `name` is taken: a dynamic key in Kafka, and seglog either
/// applies it live or does not act on it at all.
pub(crate) fn accepts_dynamic_update(name: &str) -> bool {
    dynamic::is_dynamic(name) && (dynamic::is_topic_default(name) || !is_honoured(name))
}

/// The value seglog runs with for a [`Use::Live`] key.
fn live_value(config: &BrokerConfig, name: &str) -> Option<String> {
    let log = &config.log;
    let groups = &config.groups;
    let topic_key = TOPIC_CONFIGS
        .iter()
        .find(|key| matches!(key.synonyms, [(synonym, Unit::Same)] if *synonym == name));
    if let Some(topic_key) = topic_key {
        return log.default_log_config.to_properties().remove(topic_key.name);
    }
    let value = match name {
        "advertised.listeners" => {
            let advertised: Vec<String> = config
                .listeners
                .iter()
                .filter_map(|l| {
                    let host = l.advertised_host.as_ref()?;
                    Some(format!("{}://{host}:{}", l.name, l.advertised_port.unwrap_or(0)))
                })
                .collect();
            if advertised.is_empty() {
                return None;
            }
            advertised.join(",")
        }
        "auto.create.topics.enable" => config.auto_create_topics.to_string(),
        // KIP-966: on unless set false (cluster/kraft_config.rs reads it the same way).
        "eligible.leader.replicas.enable" => {
            let given = config.properties.get("eligible.leader.replicas.enable");
            (!given.is_some_and(|value| value.trim().eq_ignore_ascii_case("false"))).to_string()
        }
        "broker.id" | "node.id" => config.node_id.to_string(),
        "listeners" => config
            .listeners
            .iter()
            .map(crate::config::Listener::entry)
            .collect::<Vec<_>>()
            .join(","),
        "log.dirs" => {
            let dirs: Vec<String> =
                log.log_dirs.iter().map(|dir| dir.display().to_string()).collect();
            dirs.join(",")
        }
        "log.flush.offset.checkpoint.interval.ms" => {
            log.flush_offset_checkpoint_interval_ms.to_string()
        }
        "log.flush.scheduler.interval.ms" => log.flush_scheduler_interval_ms.to_string(),
        "log.flush.start.offset.checkpoint.interval.ms" => {
            log.flush_start_offset_checkpoint_interval_ms.to_string()
        }
        "log.retention.check.interval.ms" => log.retention_check_interval_ms.to_string(),
        "log.cleaner.backoff.ms" => log.cleaner.backoff_ms.to_string(),
        "log.cleaner.dedupe.buffer.size" => log.cleaner.dedupe_buffer_bytes.to_string(),
        "log.cleaner.enable" => log.cleaner.enable.to_string(),
        "log.cleaner.io.buffer.size" => log.cleaner.io_buffer_bytes.to_string(),
        "log.cleaner.threads" => log.cleaner.threads.to_string(),
        "max.connections" => config.max_connections.to_string(),
        "max.incremental.fetch.session.cache.slots" => config.fetch_session_cache_slots.to_string(),
        "num.partitions" => log.n_partitions.to_string(),
        "num.recovery.threads.per.data.dir" => log.n_recovery_threads_per_data_dir.to_string(),
        "queued.max.requests" => config.queued_max_requests.to_string(),
        "replica.high.watermark.checkpoint.interval.ms" => {
            log.high_watermark_checkpoint_interval_ms.to_string()
        }
        "seglog.console.actions.enable" => config.console.actions_enable.to_string(),
        "seglog.console.listener" => {
            config.console.listener.map(|addr| addr.to_string()).unwrap_or_default()
        }
        "seglog.console.sample.interval.ms" => config.console.sample_interval_ms.to_string(),
        "seglog.fetch.max.wait.ms" => config.fetch_wait_max_ms.to_string(),
        "seglog.metrics.listener" => {
            config.metrics_listener.map(|addr| addr.to_string()).unwrap_or_default()
        }
        "seglog.metrics.partitions.max" => config.metrics_partitions_max.to_string(),
        "seglog.open.files.max" => log.open_files_max.to_string(),
        "seglog.topic.partitions.max" => config.topic_partitions_max.to_string(),
        "sasl.enabled.mechanisms" => {
            config.properties.get("sasl.enabled.mechanisms").cloned().unwrap_or_else(|| {
                crate::config::security::SASL_ENABLED_MECHANISMS_DEFAULT.to_owned()
            })
        }
        "socket.request.max.bytes" => config.socket_request_max_bytes.to_string(),
        "group.consumer.heartbeat.interval.ms" => groups.consumer_heartbeat_interval_ms.to_string(),
        "group.consumer.session.timeout.ms" => groups.consumer_session_timeout_ms.to_string(),
        "group.initial.rebalance.delay.ms" => groups.initial_rebalance_delay_ms.to_string(),
        "group.max.session.timeout.ms" => groups.max_session_timeout_ms.to_string(),
        "group.min.session.timeout.ms" => groups.min_session_timeout_ms.to_string(),
        "offset.metadata.max.bytes" => groups.offset_metadata_max_bytes.to_string(),
        "offsets.retention.minutes" => (groups.offsets_retention_ms / 60_000).to_string(),
        "offsets.topic.num.partitions" => groups.offsets_topic_partitions.to_string(),
        "offsets.topic.segment.bytes" => groups.offsets_topic_segment_bytes.to_string(),
        _ => return None,
    };
    Some(value)
}

const IGNORED_DOC: &str = "A Kafka broker config that seglog accepts and does not act on (single node, no replication); \
     shown with its value as given, else Kafka's default.";

/// Every listed key in name order: [`KEYS`] and the one-to-one broker synonyms of the topic
/// keys (Live, with the topic key's type and default).
fn listed_keys() -> &'static [ListedKey] {
    static LISTED: std::sync::LazyLock<Vec<ListedKey>> = std::sync::LazyLock::new(build_listing);
    &LISTED
}

/// Builds [`listed_keys`]' listing (once: it depends only on the tables).
fn build_listing() -> Vec<ListedKey> {
    let mut keys: Vec<ListedKey> = KEYS
        .iter()
        .map(|&(name, config_type, kafka_default, usage)| ListedKey {
            name,
            config_type,
            kafka_default: kafka_default.map(Cow::Borrowed),
            usage,
        })
        .collect();
    let defaults = seglog_storage::config::LogConfig::default().to_properties();
    for key in TOPIC_CONFIGS {
        if let [(synonym, Unit::Same)] = key.synonyms {
            let seglog_default = defaults.get(key.name).cloned().map(Cow::Owned);
            // `Some("")` marks seglog's own keys: their default is seglog's.
            let kafka_default = match key.kafka_default {
                Some(kafka) if !kafka.is_empty() => Some(Cow::Borrowed(kafka)),
                _ => seglog_default,
            };
            keys.push(ListedKey {
                name: synonym,
                config_type: key.config_type,
                kafka_default,
                usage: Use::Live,
            });
        }
    }
    keys.sort_by(|a, b| a.name.cmp(b.name));
    keys
}

/// Every broker key with its value, source and synonyms. The synonyms are the keys read for
/// the same setting (the key alone for most), set ones first and then defaults, each in order
/// of precedence, and the entry's source is the first synonym's: Kafka's `ConfigHelper`.
pub(crate) fn broker_config_entries(
    config: &BrokerConfig,
    dynamic: &DynamicConfigs,
) -> Vec<BrokerEntry> {
    let keys = listed_keys();
    let given = |name: &str| config.properties.get(name).cloned();
    // A default synonym carries the default seglog runs with: Kafka's, except where seglog's
    // differs (`listeners`, `log.dirs`, `node.id`, `max.connections`, ...).
    let seglog_defaults = BrokerConfig::default();
    let default_of = |name: &str| {
        let key = keys.iter().find(|key| key.name == name)?;
        if key.usage == Use::Live {
            live_value(&seglog_defaults, name)
        } else {
            key.kafka_default.as_deref().map(str::to_owned)
        }
    };
    keys.iter()
        .map(|key| {
            let name = key.name;
            let names: &[&'static str] = SYNONYM_GROUPS
                .iter()
                .copied()
                .find(|group| group.contains(&name))
                .unwrap_or(std::slice::from_ref(&key.name));
            let mut synonyms = dynamic_synonyms(dynamic, names);
            synonyms.extend(names.iter().filter_map(|member| {
                Some(Synonym {
                    name: Cow::Borrowed(*member),
                    value: Some(given(member)?),
                    source: SOURCE_STATIC_BROKER_CONFIG,
                })
            }));
            synonyms.extend(names.iter().filter_map(|member| {
                Some(Synonym {
                    name: Cow::Borrowed(*member),
                    value: Some(default_of(member)?),
                    source: SOURCE_DEFAULT_CONFIG,
                })
            }));
            let source = synonyms.first().map_or(SOURCE_DEFAULT_CONFIG, |synonym| synonym.source);
            let value = match key.usage {
                // A dynamic value is the one in force (a topic default's is applied live).
                _ if source == SOURCE_DYNAMIC_BROKER_CONFIG
                    || source == SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG =>
                {
                    synonyms.first().and_then(|synonym| synonym.value.clone())
                }
                Use::Live => live_value(config, name),
                Use::AsGiven | Use::Ignored => {
                    given(name).or_else(|| key.kafka_default.as_deref().map(str::to_owned))
                }
            };
            BrokerEntry {
                entry: ConfigEntry { name: name.to_owned(), value, source },
                config_type: key.config_type.id(),
                documentation: (key.usage == Use::Ignored).then_some(IGNORED_DOC),
                synonyms,
                read_only: !accepts_dynamic_update(name),
            }
        })
        .chain(rate_entries(dynamic))
        .collect()
}

/// The replication throttles' rates, listed only when set, as Kafka lists them: they are not
/// `KafkaConfig` keys, only dynamic ones, and Kafka's `ConfigHelper` marks them read-only
/// (not in `AllDynamicConfigs`) though AlterConfigs takes them.
fn rate_entries(dynamic: &DynamicConfigs) -> impl Iterator<Item = BrokerEntry> {
    RATE_KEYS.iter().filter_map(|name| {
        let synonyms = dynamic_synonyms(dynamic, std::slice::from_ref(name));
        let first = synonyms.first()?;
        Some(BrokerEntry {
            entry: ConfigEntry {
                name: (*name).to_owned(),
                value: first.value.clone(),
                source: first.source,
            },
            config_type: Type::Long.id(),
            documentation: None,
            synonyms,
            read_only: true,
        })
    })
}

/// The cluster default's keys alone, as Kafka describes the BROKER resource with the empty
/// name (`ConfigHelper`: `currentDynamicDefaultConfigs`).
pub(crate) fn cluster_default_entries(dynamic: &DynamicConfigs) -> Vec<BrokerEntry> {
    dynamic
        .cluster_default
        .iter()
        .map(|(name, value)| BrokerEntry {
            entry: ConfigEntry {
                name: name.clone(),
                value: Some(value.clone()),
                source: SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
            },
            config_type: broker_key_type(name).unwrap_or(Type::String).id(),
            documentation: None,
            synonyms: vec![Synonym {
                name: Cow::Owned(name.clone()),
                value: Some(value.clone()),
                source: SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
            }],
            read_only: false,
        })
        .collect()
}

/// A topic key's synonyms as Kafka lists them (`ConfigHelper` for a TOPIC resource): the
/// topic's override (TOPIC_CONFIG), then its broker synonyms set dynamically for this broker
/// (DYNAMIC_BROKER_CONFIG) and for all (DYNAMIC_DEFAULT_BROKER_CONFIG), then those set in
/// `server.properties` (STATIC_BROKER_CONFIG), then the first broker synonym that has a default (DEFAULT_CONFIG),
/// e.g. `retention.ms`: `log.retention.hours` 168.
pub(crate) fn topic_synonyms(
    config: &BrokerConfig,
    dynamic: &DynamicConfigs,
    name: &str,
    override_value: Option<&str>,
) -> Vec<Synonym> {
    const SOURCE_TOPIC_CONFIG: i8 = 1;
    let Some(key) = seglog_storage::config::LogConfig::key(name) else { return Vec::new() };
    let mut synonyms = Vec::new();
    if let Some(value) = override_value {
        synonyms.push(Synonym {
            name: Cow::Borrowed(key.name),
            value: Some(value.to_owned()),
            source: SOURCE_TOPIC_CONFIG,
        });
    }
    let names: Vec<&'static str> = key.synonyms.iter().map(|(synonym, _)| *synonym).collect();
    synonyms.extend(dynamic_synonyms(dynamic, &names));
    for (synonym, _) in key.synonyms {
        if let Some(value) = config.properties.get(*synonym) {
            synonyms.push(Synonym {
                name: Cow::Borrowed(*synonym),
                value: Some(value.clone()),
                source: SOURCE_STATIC_BROKER_CONFIG,
            });
        }
    }
    let seglog_defaults = BrokerConfig::default();
    let keys = listed_keys();
    let default = key.synonyms.iter().find_map(|(synonym, _)| {
        let listed = keys.iter().find(|listed| listed.name == *synonym)?;
        let value = match listed.usage {
            Use::Live => live_value(&seglog_defaults, synonym),
            Use::AsGiven | Use::Ignored => listed.kafka_default.as_deref().map(str::to_owned),
        }?;
        Some(Synonym {
            name: Cow::Borrowed(*synonym),
            value: Some(value),
            source: SOURCE_DEFAULT_CONFIG,
        })
    });
    synonyms.extend(default);
    synonyms
}

/// The broker keys seglog honours, with the default it runs with and Kafka's, for
/// docs/configuration.md: `(name, type, seglog's default, Kafka's default)`.
#[cfg(test)]
fn honoured_broker_keys() -> Vec<(&'static str, Type, Option<String>, Option<String>)> {
    let seglog_defaults = BrokerConfig::default();
    listed_keys()
        .iter()
        .filter(|key| key.usage != Use::Ignored)
        .map(|key| {
            let seglog = match key.usage {
                Use::Live => live_value(&seglog_defaults, key.name),
                Use::AsGiven | Use::Ignored => key.kafka_default.as_deref().map(str::to_owned),
            };
            (key.name, key.config_type, seglog, key.kafka_default.as_deref().map(str::to_owned))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_broker_key(name: &str) -> bool {
        listed_keys().iter().any(|key| key.name == name)
    }

    #[test]
    fn keys_are_sorted_unique_and_every_synonym_is_a_key() {
        let names: Vec<&str> = KEYS.iter().map(|key| key.0).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "KEYS is in name order, each once");
        for group in SYNONYM_GROUPS {
            for member in group {
                assert!(is_broker_key(member), "{member}");
            }
        }
        for key in TOPIC_CONFIGS {
            for (synonym, _) in key.synonyms {
                assert!(is_broker_key(synonym), "{synonym} (a topic default) is listed");
            }
        }
        let listed: Vec<&str> = listed_keys().iter().map(|key| key.name).collect();
        let mut unique = listed.clone();
        unique.dedup();
        assert_eq!(listed, unique, "no key listed twice");
    }

    #[test]
    fn a_set_key_is_static_with_its_synonyms_and_live_values_are_what_seglog_runs_with() {
        let properties = std::collections::BTreeMap::from([
            ("log.retention.hours".to_owned(), "24".to_owned()),
            ("log.segment.bytes".to_owned(), "1048576".to_owned()),
            ("auto.leader.rebalance.enable".to_owned(), "false".to_owned()),
        ]);
        let config = BrokerConfig::from_properties(&properties).expect("valid");
        let entries = broker_config_entries(&config, &DynamicConfigs::default());
        let find = |name: &str| {
            entries.iter().find(|e| e.entry.name == name).unwrap_or_else(|| panic!("{name}"))
        };
        let retention = find("log.retention.ms");
        assert_eq!(retention.entry.value, None, "Kafka's log.retention.ms has no default");
        assert_eq!(retention.entry.source, SOURCE_STATIC_BROKER_CONFIG);
        let synonyms: Vec<(&str, Option<&str>, i8)> =
            retention.synonyms.iter().map(|s| (&*s.name, s.value.as_deref(), s.source)).collect();
        assert_eq!(
            synonyms,
            vec![
                ("log.retention.hours", Some("24"), SOURCE_STATIC_BROKER_CONFIG),
                ("log.retention.hours", Some("168"), SOURCE_DEFAULT_CONFIG),
            ]
        );
        let segment = find("log.segment.bytes");
        assert_eq!(segment.entry.value.as_deref(), Some("1048576"));
        assert_eq!(segment.entry.source, SOURCE_STATIC_BROKER_CONFIG);
        let ignored = find("auto.leader.rebalance.enable");
        assert_eq!(ignored.entry.value.as_deref(), Some("false"), "as given");
        assert!(ignored.documentation.is_some_and(|doc| doc.contains("does not act on")));
        let listeners = find("listeners");
        assert_eq!(listeners.synonyms[0].value.as_deref(), Some("PLAINTEXT://127.0.0.1:9092"));
        assert_eq!(listeners.entry.value.as_deref(), Some("PLAINTEXT://127.0.0.1:9092"));
        assert_eq!(listeners.entry.source, SOURCE_DEFAULT_CONFIG);
        assert_eq!(find("log.dirs").entry.value.as_deref(), Some("./seglog-data"));
        assert_eq!(find("node.id").entry.value.as_deref(), Some("1"));
    }

    #[test]
    fn dynamic_updates_are_taken_for_topic_defaults_and_keys_seglog_does_not_act_on() {
        for name in [
            "log.retention.ms",
            "log.cleanup.policy",
            "message.max.bytes",
            "background.threads",
            "num.io.threads",
        ] {
            assert!(accepts_dynamic_update(name), "{name}");
        }
        // Dynamic in Kafka, honoured by seglog only at start (docs/configuration.md says so).
        for name in [
            "max.connections",
            "max.connections.per.ip",
            "listeners",
            "sasl.enabled.mechanisms",
            "log.cleaner.threads",
            "num.recovery.threads.per.data.dir",
        ] {
            assert!(dynamic::is_dynamic(name), "{name}");
            assert!(!accepts_dynamic_update(name), "{name}");
        }
        assert!(!accepts_dynamic_update("log.dirs"), "not dynamic in Kafka");
    }

    /// docs/configuration.md's words on setting broker keys, statically and dynamically.
    const BROKER_KEYS_DOC: &str = "In `server.properties`, `--config`, or `--override key=value`.

Some keys also change while the broker runs, as Kafka's dynamic broker configs
(`kafka-configs --bootstrap-server ... --alter --entity-type brokers --entity-name 1
--add-config log.retention.ms=3600000`, or `--entity-default` for every broker): AlterConfigs
and IncrementalAlterConfigs on a BROKER resource, named by this broker's id or by the empty
name (the cluster default). A key's value is this broker's dynamic one, else the cluster
default's, else `server.properties`'s; DescribeConfigs shows each with Kafka's source
(`DYNAMIC_BROKER_CONFIG`, `DYNAMIC_DEFAULT_BROKER_CONFIG`, `STATIC_BROKER_CONFIG`,
`DEFAULT_CONFIG`) and synonyms, and describing the empty name lists the cluster default's keys
alone. The changes are kept in `seglog-dynamic-configs` (JSON) in the first log directory,
written durably before the answer, and read at start. In a cluster they are the metadata's
`ConfigRecord`s instead (docs/cluster.md): any broker takes a change of the cluster default or
of any registered broker's layer, the controller commits it, and every broker applies the
cluster default and its own layer.

- The topic defaults (`log.retention.ms`, `log.segment.bytes`, `log.cleanup.policy`,
  `compression.type`, `message.max.bytes`, every `log.*` synonym of a topic key below) apply at
  once to every partition whose topic does not override them.
- The replication throttles' rates (`leader.replication.throttled.rate`,
  `follower.replication.throttled.rate`, bytes per second, at least 0) apply at once to the
  replicas the topics' `*.replication.throttled.replicas` name (docs/replication.md); as in
  Kafka they are listed only when set.
- Keys seglog does not act on (`background.threads`, `num.io.threads`, the Kerberos and
  replication keys, ...) are kept and shown, as when set statically; so are keys Kafka does not
  know (Kafka allows custom keys).
- Kafka's refusals are kept, with its messages (INVALID_REQUEST): a key Kafka does not let
  change (`broker.id`, `log.dirs`, ...: \"Cannot update these configs dynamically\"); an SSL
  keystore or truststore key without its `listener.name.<listener>.` prefix; a per-broker key
  (listeners, SSL, SASL) at the cluster default; a value not of its key's type; another
  broker's id on a single node.
- seglog refuses, saying so, a dynamic key it acts on only at start (`max.connections`,
  `max.connections.per.ip`, `listeners`, `sasl.enabled.mechanisms`, the `log.cleaner.*`
  settings, `num.recovery.threads.per.data.dir`, ...): set these in `server.properties` and
  restart. DescribeConfigs marks them read-only.";

    /// docs/configuration.md, from the definition tables.
    fn configuration_doc() -> String {
        use std::fmt::Write as _;

        let show = |value: Option<&str>| match value {
            None => "null".to_owned(),
            Some("") => "(empty)".to_owned(),
            Some(text) => format!("`{text}`"),
        };
        let defaults = seglog_storage::config::LogConfig::default().to_properties();
        let mut doc = String::from(
            "# Configuration\n\n\
             Generated from the definition tables by a test (`TOPIC_CONFIGS` in\n\
             `crates/storage/src/config/mod.rs`, the broker listing in\n\
             `crates/broker/src/handlers/broker_configs.rs`); edit those, then run\n\
             `UPDATE_EXPECT=1 cargo test -p seglog-broker configuration_doc`. CI fails when this\n\
             page is stale.\n\n\
             ## Topic keys\n\n\
             Set per topic (CreateTopics, AlterConfigs, `seglog topics create --config`); the\n\
             broker synonyms, first set wins, give the default in `server.properties`.\n\n\
             | key | type | default | valid values | broker synonyms | differs from Kafka | meaning |\n\
             |---|---|---|---|---|---|---|\n",
        );
        for key in TOPIC_CONFIGS {
            let synonyms: Vec<String> = key
                .synonyms
                .iter()
                .map(|(name, unit)| match unit {
                    Unit::Same => format!("`{name}`"),
                    Unit::Minutes => format!("`{name}` (minutes)"),
                    Unit::Hours => format!("`{name}` (hours)"),
                })
                .collect();
            let differs = match key.kafka_default {
                None => "no".to_owned(),
                Some("") => "seglog's own key".to_owned(),
                Some(kafka) => format!("yes: Kafka 4.x's default is `{kafka}`"),
            };
            let _ = writeln!(
                doc,
                "| `{}` | {} | {} | {} | {} | {differs} | {} |",
                key.name,
                key.config_type.name(),
                show(defaults.get(key.name).map(String::as_str)),
                key.validator.describe(),
                synonyms.join(", "),
                key.doc.trim(),
            );
        }
        doc.push_str("\n## Broker keys seglog honours\n\n");
        doc.push_str(BROKER_KEYS_DOC);
        doc.push_str("\n\n| key | type | default | Kafka's default |\n|---|---|---|---|\n");
        for (name, config_type, seglog, kafka) in honoured_broker_keys() {
            let kafka =
                if kafka == seglog { "the same".to_owned() } else { show(kafka.as_deref()) };
            let _ = writeln!(
                doc,
                "| `{name}` | {} | {} | {kafka} |",
                config_type.name(),
                show(seglog.as_deref())
            );
        }
        doc.push_str(
            "\n## Broker keys accepted and not acted on\n\n\
             Kafka's keys for what seglog does not have yet (replication, security, quotas, the\n\
             metadata quorum, ...): accepted, listed by DescribeConfigs with Kafka's default,\n\
             and otherwise ignored.\n\n",
        );
        let ignored: Vec<String> = listed_keys()
            .iter()
            .filter(|key| key.usage == Use::Ignored)
            .map(|key| format!("`{}`", key.name))
            .collect();
        doc.push_str(&ignored.join(", "));
        doc.push('\n');
        doc
    }

    #[test]
    fn configuration_doc_is_generated_from_the_tables() {
        expect_test::expect_file!["../../../../docs/configuration.md"]
            .assert_eq(&configuration_doc());
    }
}
