//! AlterConfigs and IncrementalAlterConfigs on a BROKER resource (Kafka's `ConfigAdminManager`
//! for brokers and `DynamicBrokerConfig.updateBrokerConfig`): the change is checked, written
//! to `seglog-dynamic-configs`, and applied: the topic defaults to every log at once.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;
use seglog_storage::config::{BrokerLogConfig, ConfigType, LogConfig};
use seglog_storage::manager::LogManager;

use super::broker_configs::{broker_key_kafka_default, broker_key_type, is_honoured};
use crate::Broker;
use crate::config::BrokerConfig;
use crate::config::dynamic::{
    self, DYNAMIC_CONFIG_FILE, DYNAMIC_CONFIG_FILE_BYTES_MAX, DynamicConfigs,
};
use crate::error::{Error, storage_error};

/// One IncrementalAlterConfigs operation on a key.
pub(crate) enum Operation {
    Set(String),
    Delete,
    Append(String),
    Subtract(String),
}

fn invalid_request(message: String) -> Error {
    Error::wire_with(ResponseError::InvalidRequest, message)
}

/// Whether `name` names this broker's resource (`true`) or the cluster default (`false`, the
/// empty name); another broker's id is INVALID_REQUEST, as in Kafka.
fn resource_is_per_broker(broker: &Broker, name: &str) -> Result<bool, Error> {
    if name.is_empty() {
        return Ok(false);
    }
    let id: i32 = name
        .parse()
        .map_err(|_| invalid_request(format!("Node id must be an integer, but it is: {name}")))?;
    if id != broker.config.node_id {
        return Err(invalid_request(format!(
            "Unexpected broker id, expected {}, but received {name}",
            broker.config.node_id
        )));
    }
    Ok(true)
}

/// The topic defaults of `server.properties` under `dynamic`'s layers.
fn log_defaults(config: &BrokerConfig, dynamic: &DynamicConfigs) -> Result<LogConfig, String> {
    BrokerLogConfig::from_properties(&dynamic.merged(&config.properties))
        .map(|log| log.default_log_config)
        .map_err(|error| error.to_string())
}

/// Reads `seglog-dynamic-configs` at start and applies its topic defaults to the loaded logs.
pub(crate) fn load_dynamic_configs(
    config: &BrokerConfig,
    manager: &LogManager,
) -> Result<DynamicConfigs, String> {
    let text = manager
        .read_metadata_file(DYNAMIC_CONFIG_FILE, DYNAMIC_CONFIG_FILE_BYTES_MAX)
        .map_err(|error| error.to_string())?;
    let Some(text) = text else { return Ok(DynamicConfigs::default()) };
    let dynamic =
        DynamicConfigs::parse(&text).map_err(|error| format!("{DYNAMIC_CONFIG_FILE}: {error}"))?;
    if !dynamic.per_broker.is_empty() || !dynamic.cluster_default.is_empty() {
        let defaults = log_defaults(config, &dynamic)?;
        manager.set_default_log_config(defaults).map_err(|error| error.to_string())?;
    }
    Ok(dynamic)
}

/// Replaces the layer of the BROKER resource `name` with what `change` makes of it, after
/// Kafka's checks; with `validate_only`, only checks. A cluster's broker forwards the new layer
/// to the controller ([`alter_in_cluster`]).
fn alter(
    broker: &Broker,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, Error>,
) -> Result<(), Error> {
    if let Some(link) = broker.cluster() {
        return alter_in_cluster(broker, link, name, validate_only, change);
    }
    let per_broker = resource_is_per_broker(broker, name)?;
    let mut current =
        broker.dynamic_configs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let layer = change(current.layer(per_broker))?;
    dynamic::validate(&layer, per_broker, broker_key_type, is_honoured).map_err(invalid_request)?;
    let mut next = current.clone();
    *next.layer_mut(per_broker) = layer;
    let defaults = log_defaults(&broker.config, &next).map_err(invalid_request)?;
    if validate_only {
        return Ok(());
    }
    broker
        .manager
        .write_metadata_file(DYNAMIC_CONFIG_FILE, next.to_text().as_bytes())
        .map_err(|error| Error::wire_with(storage_error(&error), error.to_string()))?;
    broker
        .manager
        .set_default_log_config(defaults)
        .map_err(|error| Error::wire_with(storage_error(&error), error.to_string()))?;
    *current = next;
    Ok(())
}

/// The cluster's way (Kafka's KRaft `ConfigurationControlManager`): the layer of the cluster
/// default or of any registered broker, as the committed metadata has it, changed and checked
/// here, then written by the controller as Config records; every broker applies the cluster
/// default and its own layer ([`apply_from_metadata`]), this one before the answer.
fn alter_in_cluster(
    broker: &Broker,
    link: &crate::cluster::link::ClusterLink,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, Error>,
) -> Result<(), Error> {
    use crate::cluster::records::CONFIG_RESOURCE_BROKER;
    let per_broker = !name.is_empty();
    if per_broker {
        let id: i32 = name.parse().map_err(|_| {
            invalid_request(format!("Node id must be an integer, but it is: {name}"))
        })?;
        if !link.with_image(|image| image.brokers.contains_key(&id)) {
            return Err(invalid_request(format!("Broker {name} is not registered.")));
        }
    }
    let (current, own) = link.with_image(|image| {
        let layer = |name: &str| {
            image
                .configs
                .get(&(CONFIG_RESOURCE_BROKER, name.to_owned()))
                .cloned()
                .unwrap_or_default()
        };
        (layer(name), (layer(""), layer(&broker.config.node_id.to_string())))
    });
    let layer = change(&current)?;
    dynamic::validate(&layer, per_broker, broker_key_type, is_honoured).map_err(invalid_request)?;
    // The topic defaults this broker would run with, when the change is its own.
    let mine = !per_broker || name == broker.config.node_id.to_string();
    if mine {
        let mut next = DynamicConfigs::default();
        (next.cluster_default, next.per_broker) = own;
        *next.layer_mut(per_broker) = layer.clone();
        log_defaults(&broker.config, &next).map_err(invalid_request)?;
    }
    if validate_only {
        return Ok(());
    }
    let request = crate::cluster::raft::network::AdminRequest::SetBrokerConfigs {
        name: name.to_owned(),
        layer,
    };
    super::cluster::forward(link, request).map_err(|(code, text)| {
        Error::wire_with(
            ResponseError::try_from_code(code).unwrap_or(ResponseError::UnknownServerError),
            text,
        )
    })
}

/// A cluster's broker takes the committed metadata's cluster default and its own layer as
/// its dynamic configs (the applier calls this when either changed): the topic defaults go to
/// every log, the replication throttles' rates to the replication quotas. The local `seglog-dynamic-configs` file is not read or written in a cluster.
pub(crate) fn apply_from_metadata(
    broker: &Broker,
    cluster_default: BTreeMap<String, String>,
    per_broker: BTreeMap<String, String>,
) {
    broker.replication.quotas.update_rates(&cluster_default, &per_broker);
    let mut next = DynamicConfigs::default();
    (next.cluster_default, next.per_broker) = (cluster_default, per_broker);
    match log_defaults(&broker.config, &next) {
        Ok(defaults) => {
            if let Err(error) = broker.manager.set_default_log_config(defaults) {
                tracing::error!(%error, "cannot apply the cluster's topic defaults");
            }
        }
        Err(error) => tracing::warn!(%error, "the cluster's broker configs are not applied"),
    }
    *broker.dynamic_configs.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = next;
}

/// AlterConfigs on a BROKER resource: `configs` replace its whole layer, as in Kafka.
pub(crate) fn alter_broker(
    broker: &Broker,
    name: &str,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), Error> {
    alter(broker, name, validate_only, |_| Ok(configs))
}

/// IncrementalAlterConfigs on a BROKER resource: each operation on the layer as it is (APPEND
/// and SUBTRACT on a list key start from Kafka's default when the layer does not set it, as
/// Kafka's `prepareIncrementalConfigs`).
pub(crate) fn incremental_alter_broker(
    broker: &Broker,
    name: &str,
    operations: Vec<(String, Operation)>,
    validate_only: bool,
) -> Result<(), Error> {
    alter(broker, name, validate_only, |layer| {
        let mut layer = layer.clone();
        apply_operations(
            &mut layer,
            operations,
            |key| broker_key_type(key) == Some(ConfigType::List),
            broker_key_kafka_default,
        )?;
        Ok(layer)
    })
}

/// IncrementalAlterConfigs' operations on one resource's keys (Kafka's
/// `prepareIncrementalConfigs`): SET, DELETE, and APPEND / SUBTRACT on a list key (`is_list`),
/// which start from the key's value in `keys`, else from `base` (the topic's effective value,
/// Kafka's default for a broker).
pub(crate) fn apply_operations(
    keys: &mut BTreeMap<String, String>,
    operations: Vec<(String, Operation)>,
    is_list: impl Fn(&str) -> bool,
    base: impl Fn(&str) -> Option<String>,
) -> Result<(), Error> {
    for (key, operation) in operations {
        let (append, value) = match operation {
            Operation::Set(value) => {
                keys.insert(key, value);
                continue;
            }
            Operation::Delete => {
                keys.remove(&key);
                continue;
            }
            Operation::Append(value) => (true, value),
            Operation::Subtract(value) => (false, value),
        };
        if !is_list(&key) {
            let op = if append { "append" } else { "subtract" };
            return Err(Error::wire_with(
                ResponseError::InvalidConfig,
                format!("Config value {op} is not allowed for config key: {key}"),
            ));
        }
        let mut items = keys
            .get(&key)
            .cloned()
            .or_else(|| base(&key))
            .as_deref()
            .map(split)
            .unwrap_or_default();
        let given = split(&value);
        if append {
            for item in given {
                if !items.contains(&item) {
                    items.push(item);
                }
            }
        } else {
            items.retain(|item| !given.contains(item));
        }
        keys.insert(key, items.join(","));
    }
    Ok(())
}

fn split(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|item| !item.is_empty()).map(str::to_owned).collect()
}
