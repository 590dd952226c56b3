//! Dynamic broker configs (Kafka's `DynamicBrokerConfig`): the keys AlterConfigs and
//! IncrementalAlterConfigs set on a BROKER resource, for this broker (`--entity-name 1`,
//! DYNAMIC_BROKER_CONFIG) or for every broker (the empty name, `--entity-default`,
//! DYNAMIC_DEFAULT_BROKER_CONFIG), over `server.properties`: a key's value is the per-broker
//! one, else the default one, else the static one.
//!
//! Kafka's rules for which keys may change, and its messages, are kept: a key of Kafka's broker
//! config that is not dynamic is refused, so are the SSL keystore keys without a listener
//! prefix and the per-broker keys at the default level, and values are checked against their
//! key's type. Keys Kafka does not know are kept as they are (Kafka allows custom keys). seglog
//! applies a topic default (`log.retention.ms`, `log.cleanup.policy`, ...) to every log at once;
//! it keeps and shows a key it does not act on (`background.threads`, the Kerberos keys, ...);
//! and it refuses, with a message that says so, a key it acts on only at start
//! (`max.connections`, `listeners`, ...).
//!
//! Kafka keeps these in its metadata log (`ConfigRecord`); seglog keeps them in one JSON file,
//! `seglog-dynamic-configs` in the first log directory, replaced atomically and durably
//! (through storage's `Fs`) before a change is acknowledged, and read at start.

use std::collections::{BTreeMap, BTreeSet};

use seglog_storage::config::ConfigType;
use serde::{Deserialize, Serialize};

use crate::replication::quota::RATE_KEYS;

/// The file's name in the first log directory.
pub(crate) const DYNAMIC_CONFIG_FILE: &str = "seglog-dynamic-configs";
/// The largest file read.
pub(crate) const DYNAMIC_CONFIG_FILE_BYTES_MAX: u64 = 16 << 20;
/// The format version written.
const VERSION: u32 = 1;

/// Kafka's `SslConfigs.RECONFIGURABLE_CONFIGS`: dynamic per listener only
/// (`listener.name.<listener>.<key>`).
const SECURITY_KEYS: [&str; 10] = [
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
];

/// Kafka's `DynamicListenerConfig.ReconfigurableConfigs`: per broker, except
/// [`CLUSTER_LEVEL_LISTENER_KEYS`].
const LISTENER_KEYS: [&str; 37] = [
    "advertised.listeners",
    "listeners",
    "listener.security.protocol.map",
    "principal.builder.class",
    "ssl.protocol",
    "ssl.provider",
    "ssl.cipher.suites",
    "ssl.enabled.protocols",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation",
    "ssl.client.auth",
    "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol",
    "sasl.jaas.config",
    "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "max.connections",
    "max.connection.creation.rate",
    "num.network.threads",
];

/// Kafka's `ClusterLevelListenerConfigs`: listener keys that may also be set at the default.
const CLUSTER_LEVEL_LISTENER_KEYS: [&str; 3] =
    ["max.connections", "max.connection.creation.rate", "num.network.threads"];

/// The rest of Kafka's `AllDynamicConfigs` (the log cleaner's, the thread pools', the socket
/// server's, the producer state manager's, remote storage's, metric reporters, and the topic
/// defaults of the topic keys seglog keeps without acting on), without the topic defaults of
/// storage's topic keys.
const OTHER_DYNAMIC_KEYS: [&str; 26] = [
    "background.threads",
    "log.local.retention.bytes",
    "log.local.retention.ms",
    "log.message.downconversion.enable",
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.threads",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "message.max.bytes",
    "metric.reporters",
    "num.io.threads",
    "num.recovery.threads.per.data.dir",
    "num.replica.fetchers",
    "producer.id.expiration.ms",
    "remote.fetch.max.wait.ms",
    "remote.list.offsets.request.timeout.ms",
    "remote.log.index.file.cache.total.size.bytes",
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.fetch.max.bytes.per.second",
    "transaction.partition.verification.enable",
];

/// Whether Kafka lets `name` (without a listener prefix) change dynamically: its
/// `AllDynamicConfigs` and the replication throttles' rates (`DynamicConfig.Broker`).
pub(crate) fn is_dynamic(name: &str) -> bool {
    is_topic_default(name)
        || LISTENER_KEYS.contains(&name)
        || OTHER_DYNAMIC_KEYS.contains(&name)
        || RATE_KEYS.contains(&name)
}

/// Whether `name` is a broker default of a topic key (`log.retention.ms`, `compression.type`,
/// ...: Kafka's `DynamicLogConfig`, all but `log.message.format.version`).
pub(crate) fn is_topic_default(name: &str) -> bool {
    name != "log.message.format.version"
        && seglog_storage::config::TOPIC_CONFIGS
            .iter()
            .any(|key| key.synonyms.iter().any(|(synonym, _)| *synonym == name))
}

/// `listener.name.<listener>.<key>`: the key.
fn listener_base(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("listener.name.")?;
    let (_, base) = rest.split_once('.')?;
    Some(base)
}

/// The dynamic layers, as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DynamicConfigs {
    version: u32,
    /// This broker's keys (DYNAMIC_BROKER_CONFIG).
    pub(crate) per_broker: BTreeMap<String, String>,
    /// Every broker's keys (DYNAMIC_DEFAULT_BROKER_CONFIG).
    pub(crate) cluster_default: BTreeMap<String, String>,
}

impl DynamicConfigs {
    /// Reads the file's text.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let configs: Self = serde_json::from_str(text).map_err(|error| error.to_string())?;
        if configs.version != VERSION {
            return Err(format!(
                "format version {} (this seglog reads {VERSION})",
                configs.version
            ));
        }
        Ok(configs)
    }

    /// The file's text.
    pub(crate) fn to_text(&self) -> String {
        let mut configs = self.clone();
        configs.version = VERSION;
        serde_json::to_string_pretty(&configs).unwrap_or_else(|_| unreachable!("maps of strings"))
    }

    /// The layer of a BROKER resource: this broker's, or the default's.
    pub(crate) fn layer(&self, per_broker: bool) -> &BTreeMap<String, String> {
        if per_broker { &self.per_broker } else { &self.cluster_default }
    }

    /// The same, to change.
    pub(crate) fn layer_mut(&mut self, per_broker: bool) -> &mut BTreeMap<String, String> {
        if per_broker { &mut self.per_broker } else { &mut self.cluster_default }
    }

    /// `server.properties` with the default layer over it and this broker's over that.
    pub(crate) fn merged(&self, properties: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut merged = properties.clone();
        merged.extend(self.cluster_default.iter().map(|(k, v)| (k.clone(), v.clone())));
        merged.extend(self.per_broker.iter().map(|(k, v)| (k.clone(), v.clone())));
        merged
    }
}

/// Kafka's `Set(a, b)` of names, for its messages.
fn set_text(names: &BTreeSet<&str>) -> String {
    let names: Vec<&str> = names.iter().copied().collect();
    format!("Set({})", names.join(", "))
}

/// Checks a resource's new layer as Kafka's `DynamicBrokerConfig.validateConfigs` does (in
/// order: non-dynamic keys, security keys without a listener prefix, value types, per-broker
/// keys at the default level), then seglog's own rule: a key seglog acts on only at start
/// cannot change while it runs. `type_of` is the type of a key of Kafka's broker config
/// (`None`: a key Kafka does not know); `honoured_at_start` says whether seglog acts on a key
/// only at start. The `Err` is the message Kafka answers with INVALID_REQUEST.
pub(crate) fn validate(
    layer: &BTreeMap<String, String>,
    per_broker: bool,
    type_of: impl Fn(&str) -> Option<ConfigType>,
    honoured_at_start: impl Fn(&str) -> bool,
) -> Result<(), String> {
    let base = |name: &'_ str| -> String { listener_base(name).unwrap_or(name).to_owned() };
    let not_dynamic: BTreeSet<&str> = layer
        .keys()
        .map(String::as_str)
        .filter(|name| listener_base(name).is_none())
        .filter(|name| type_of(name).is_some() && !is_dynamic(name))
        .collect();
    if !not_dynamic.is_empty() {
        return Err(format!("Cannot update these configs dynamically: {}", set_text(&not_dynamic)));
    }
    let unprefixed: BTreeSet<&str> =
        layer.keys().map(String::as_str).filter(|name| SECURITY_KEYS.contains(name)).collect();
    if !unprefixed.is_empty() {
        return Err(format!(
            "These security configs can be dynamically updated only per-listener using the \
             listener prefix: {}",
            set_text(&unprefixed)
        ));
    }
    for (name, value) in layer {
        if let Some(config_type) = type_of(&base(name)) {
            check_type(name, value, config_type)?;
        }
        // `QuotaConfig.brokerQuotaConfigs`: each rate is `atLeast(0)`.
        if RATE_KEYS.contains(&name.as_str()) && value.trim().parse::<i64>().is_ok_and(|v| v < 0) {
            return Err(format!(
                "Invalid value {value} for configuration {name}: Value must be at least 0"
            ));
        }
    }
    if !per_broker {
        let per_broker_only: BTreeSet<&str> = layer
            .keys()
            .map(String::as_str)
            .filter(|name| match listener_base(name) {
                Some(base) => !CLUSTER_LEVEL_LISTENER_KEYS.contains(&base),
                None => {
                    (LISTENER_KEYS.contains(name) || SECURITY_KEYS.contains(name))
                        && !CLUSTER_LEVEL_LISTENER_KEYS.contains(name)
                }
            })
            .collect();
        if !per_broker_only.is_empty() {
            return Err(format!(
                "Cannot update these configs at default cluster level, broker id must be \
                 specified: {}",
                set_text(&per_broker_only)
            ));
        }
    }
    let at_start: BTreeSet<&str> = layer
        .keys()
        .map(String::as_str)
        .filter(|name| !is_topic_default(name) && honoured_at_start(&base(name)))
        .collect();
    if !at_start.is_empty() {
        return Err(format!(
            "seglog applies these configs only at start (set them in server.properties and \
             restart): {}",
            set_text(&at_start)
        ));
    }
    Ok(())
}

/// Kafka's `ConfigDef.parseType` check of one value.
fn check_type(name: &str, value: &str, config_type: ConfigType) -> Result<(), String> {
    let trimmed = value.trim();
    let invalid =
        |reason: &str| Err(format!("Invalid value {value} for configuration {name}: {reason}"));
    match config_type {
        ConfigType::Boolean
            if !trimmed.eq_ignore_ascii_case("true") && !trimmed.eq_ignore_ascii_case("false") =>
        {
            invalid("Expected value to be either true or false")
        }
        ConfigType::Short if trimmed.parse::<i16>().is_err() => {
            invalid("Not a number of type SHORT")
        }
        ConfigType::Int if trimmed.parse::<i32>().is_err() => invalid("Not a number of type INT"),
        ConfigType::Long if trimmed.parse::<i64>().is_err() => invalid("Not a number of type LONG"),
        ConfigType::Double if trimmed.parse::<f64>().is_err() => {
            invalid("Not a number of type DOUBLE")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn kafka_type(name: &str) -> Option<ConfigType> {
        match name {
            "broker.id" | "background.threads" | "log.segment.bytes" => Some(ConfigType::Int),
            "log.retention.ms" => Some(ConfigType::Long),
            "log.cleanup.policy" => Some(ConfigType::List),
            "ssl.keystore.location" | "listeners" | "sasl.kerberos.min.time.before.relogin" => {
                Some(ConfigType::String)
            }
            "unclean.leader.election.enable" => Some(ConfigType::Boolean),
            "log.dirs" => Some(ConfigType::String),
            _ => None,
        }
    }

    fn check(pairs: &[(&str, &str)], per_broker: bool) -> Result<(), String> {
        validate(&layer(pairs), per_broker, kafka_type, |name| name == "listeners")
    }

    #[test]
    fn kafkas_rules_and_messages() {
        assert_eq!(
            check(&[("background.threads", "9"), ("log.cleanup.policy", "compact")], true),
            Ok(())
        );
        assert_eq!(check(&[("sasl.kerberos.min.time.before.relogin", "58000")], true), Ok(()));
        assert_eq!(check(&[("my.custom.key", "x")], false), Ok(()), "custom keys are kept");
        assert_eq!(
            check(&[("broker.id", "2"), ("log.dirs", "/x"), ("background.threads", "3")], true),
            Err("Cannot update these configs dynamically: Set(broker.id, log.dirs)".to_owned())
        );
        assert_eq!(
            check(&[("ssl.keystore.location", "/k.pem")], true),
            Err("These security configs can be dynamically updated only per-listener using the \
                 listener prefix: Set(ssl.keystore.location)"
                .to_owned())
        );
        assert_eq!(
            check(&[("background.threads", "many")], true),
            Err(
                "Invalid value many for configuration background.threads: Not a number of type INT"
                    .to_owned()
            )
        );
        assert_eq!(
            check(&[("listener.name.ssl.background.threads", "x")], true),
            Err("Invalid value x for configuration listener.name.ssl.background.threads: Not a \
                 number of type INT"
                .to_owned()),
            "a listener key is checked by its base key's type"
        );
        assert_eq!(
            check(
                &[("sasl.kerberos.min.time.before.relogin", "1"), ("log.retention.ms", "1")],
                false
            ),
            Err("Cannot update these configs at default cluster level, broker id must be \
                 specified: Set(sasl.kerberos.min.time.before.relogin)"
                .to_owned())
        );
        assert_eq!(
            check(&[("listener.name.ssl.ssl.keystore.location", "/k.pem")], false)
                .map_err(|e| e.starts_with("Cannot update these configs at default cluster level")),
            Err(true)
        );
        assert_eq!(
            check(&[("listeners", "PLAINTEXT://:9093")], true),
            Err("seglog applies these configs only at start (set them in server.properties and \
                 restart): Set(listeners)"
                .to_owned())
        );
        assert_eq!(
            check(&[("unclean.leader.election.enable", "maybe")], true),
            Err("Invalid value maybe for configuration unclean.leader.election.enable: Expected \
                 value to be either true or false"
                .to_owned())
        );
    }

    #[test]
    fn the_replication_throttles_rates_are_dynamic_at_both_levels_and_at_least_zero() {
        for per_broker in [true, false] {
            let rates = [
                ("leader.replication.throttled.rate", "1048576"),
                ("follower.replication.throttled.rate", "0"),
                ("replica.alter.log.dirs.io.max.bytes.per.second", "10"),
            ];
            assert_eq!(check(&rates, per_broker), Ok(()));
        }
        assert_eq!(
            check(&[("leader.replication.throttled.rate", "-1")], true),
            Err("Invalid value -1 for configuration leader.replication.throttled.rate: Value \
                 must be at least 0"
                .to_owned())
        );
        let typed = |name: &str| {
            kafka_type(name).or_else(|| RATE_KEYS.contains(&name).then_some(ConfigType::Long))
        };
        assert_eq!(
            validate(
                &layer(&[("follower.replication.throttled.rate", "fast")]),
                true,
                typed,
                |_| { false }
            ),
            Err("Invalid value fast for configuration follower.replication.throttled.rate: Not \
                 a number of type LONG"
                .to_owned())
        );
    }

    #[test]
    fn topic_defaults_are_dynamic_and_live_and_the_file_round_trips() {
        for name in
            ["log.retention.ms", "log.retention.hours", "log.cleanup.policy", "message.max.bytes"]
        {
            assert!(is_dynamic(name), "{name}");
            assert!(is_topic_default(name), "{name}");
        }
        assert!(!is_dynamic("log.message.format.version"));
        assert!(!is_dynamic("log.cleaner.enable"));
        assert!(!is_topic_default("background.threads"));
        let mut configs = DynamicConfigs::default();
        configs.layer_mut(true).insert("background.threads".into(), "9".into());
        configs.layer_mut(false).insert("log.retention.ms".into(), "1000".into());
        let text = configs.to_text();
        let read = DynamicConfigs::parse(&text).expect("reads its own text");
        assert_eq!(read.per_broker, configs.per_broker);
        assert_eq!(read.cluster_default, configs.cluster_default);
        assert!(DynamicConfigs::parse(&text.replace("\"version\": 1", "\"version\": 9")).is_err());
        let merged = read.merged(&layer(&[("log.retention.ms", "5"), ("background.threads", "1")]));
        assert_eq!(merged["log.retention.ms"], "1000", "the default layer over the static");
        assert_eq!(merged["background.threads"], "9", "this broker's over both");
    }
}
