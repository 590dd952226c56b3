//! Kafka's KRaft keys (`KRaftConfigs`, `QuorumConfig`) as seglog reads them: `process.roles`,
//! `node.id`, `controller.quorum.voters`, `controller.listener.names`, `listeners` and
//! `metadata.log.dir` / `log.dirs`, with Kafka's checks and texts. A configuration without
//! `process.roles` is the single node seglog has always been, and none of this applies.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::raft::node::QuorumTimings;

/// A role of a KRaft process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProcessRole {
    Broker,
    Controller,
}

/// A voter of the metadata quorum, from `controller.quorum.voters`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Voter {
    pub id: i32,
    pub host: String,
    pub port: u16,
}

impl Voter {
    /// `host:port`.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// What a KRaft process runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KraftConfig {
    pub roles: BTreeSet<ProcessRole>,
    pub node_id: i32,
    /// By id.
    pub voters: BTreeMap<i32, Voter>,
    /// `controller.quorum.bootstrap.servers`, `host:port`: where a broker-only node finds the
    /// quorum when `controller.quorum.voters` is not given.
    pub bootstrap_servers: Vec<String>,
    /// Where this node answers the quorum (its `controller.listener.names` listener).
    pub controller_listener: Option<(String, u16)>,
    /// `metadata.log.dir`, else the first of `log.dirs` (Kafka's rule).
    pub metadata_log_dir: PathBuf,
    /// `broker.session.timeout.ms` (9000).
    pub broker_session_timeout_ms: i64,
    /// `eligible.leader.replicas.enable`: KIP-966's eligible leader replicas (seglog's
    /// default true; Kafka's false before 4.1's feature).
    pub eligible_leader_replicas: bool,
    /// `metadata.max.idle.interval.ms` (500): how often an idle leader appends a `NoOpRecord`,
    /// so that followers see the log advance; 0 turns it off.
    pub metadata_max_idle_interval_ms: u64,
    /// `metadata.log.max.record.bytes.between.snapshots` (20 MiB): a snapshot once the log
    /// holds this many bytes after the last one.
    pub snapshot_after_bytes: u64,
    /// `metadata.log.max.snapshot.interval.ms` (1 hour): a snapshot at least this often while
    /// the log grows.
    pub snapshot_interval_ms: u64,
    pub timings: QuorumTimings,
}

/// A key Kafka would refuse, with Kafka's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KraftConfigError(pub String);

fn list(properties: &BTreeMap<String, String>, key: &str) -> Vec<String> {
    properties
        .get(key)
        .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// `process.roles`, or `None` when it is unset (a single node, not KRaft).
pub fn process_roles(
    properties: &BTreeMap<String, String>,
) -> Result<Option<BTreeSet<ProcessRole>>, KraftConfigError> {
    let roles = list(properties, "process.roles");
    if roles.is_empty() {
        return Ok(None);
    }
    roles
        .iter()
        .map(|role| match role.as_str() {
            "broker" => Ok(ProcessRole::Broker),
            "controller" => Ok(ProcessRole::Controller),
            role => Err(KraftConfigError(format!(
                "Unknown process role '{role}' (only 'broker' and 'controller' are allowed roles)"
            ))),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// Kafka's `QuorumConfig.parseVoterConnections`.
pub fn parse_voters(entries: &[String]) -> Result<BTreeMap<i32, Voter>, KraftConfigError> {
    let form = "Each entry should be in the form `{id}@{host}:{port}`.";
    let mut voters = BTreeMap::new();
    for entry in entries {
        let parts: Vec<&str> = entry.split('@').collect();
        let [id, address] = parts.as_slice() else {
            return Err(KraftConfigError(format!(
                "Invalid configuration value for controller.quorum.voters. {form}"
            )));
        };
        let id: i32 = id.parse().map_err(|_| {
            KraftConfigError(format!("Failed to parse voter ID as an integer from {id}"))
        })?;
        let (host, port) = address.rsplit_once(':').unwrap_or((address, ""));
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(KraftConfigError(format!(
                "Failed to parse host name from entry {entry} for the configuration controller.quorum.voters. {form}"
            )));
        }
        let port: u16 = port.parse().map_err(|_| {
            KraftConfigError(format!(
                "Failed to parse host port from entry {entry} for the configuration controller.quorum.voters. {form}"
            ))
        })?;
        if host == "0.0.0.0" {
            return Err(KraftConfigError("Host string (0.0.0.0) is not routeable".to_owned()));
        }
        voters.insert(id, Voter { id, host: host.to_owned(), port });
    }
    Ok(voters)
}

/// Kafka's `QuorumConfig.parseBootstrapServers`, with its texts: `host:port` entries.
pub fn parse_bootstrap_servers(entries: &[String]) -> Result<Vec<String>, KraftConfigError> {
    let form = "Each entry should be in the form \"{host}:{port}\"";
    let key = "controller.quorum.bootstrap.servers";
    entries
        .iter()
        .map(|entry| {
            let (host, port) = entry.rsplit_once(':').unwrap_or((entry, ""));
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if host.is_empty() {
                return Err(KraftConfigError(format!(
                    "Failed to parse host name from {entry} for the configuration {key}. {form}"
                )));
            }
            if port.parse::<u16>().is_err() {
                return Err(KraftConfigError(format!(
                    "Failed to parse host port from {entry} for the configuration {key}. {form}"
                )));
            }
            Ok(entry.clone())
        })
        .collect()
}

/// A controller's quorum listener (its `controller.listener.names` entry of `listeners`), with
/// Kafka's checks of the voters.
fn controller_listener(
    properties: &BTreeMap<String, String>,
    node_id: i32,
    voters: &BTreeMap<i32, Voter>,
) -> Result<(String, u16), KraftConfigError> {
    if voters.is_empty() {
        return Err(KraftConfigError(
            "controller.quorum.bootstrap.servers without controller.quorum.voters is a dynamic \
             quorum (KIP-853), which seglog's controllers do not run yet: give the voters as \
             controller.quorum.voters"
                .to_owned(),
        ));
    }
    if !voters.contains_key(&node_id) {
        let ids: Vec<String> = voters.keys().map(ToString::to_string).collect();
        return Err(KraftConfigError(format!(
            "If process.roles contains the 'controller' role, the node id {node_id} must be included in the set of voters controller.quorum.voters=Set({})",
            ids.join(", ")
        )));
    }
    let controller_names = list(properties, "controller.listener.names");
    for listener in list(properties, "listeners") {
        let Some((name, address)) = listener.split_once("://") else { continue };
        if controller_names.iter().any(|n| n == name) {
            let (host, port) = address.rsplit_once(':').unwrap_or((address, ""));
            let port: u16 = port.parse().map_err(|_| {
                KraftConfigError(format!("Invalid value {listener} for configuration listeners"))
            })?;
            return Ok((host.to_owned(), port));
        }
    }
    Err(KraftConfigError(
        "controller.listener.names must contain at least one value appearing in the 'listeners' \
         configuration when running the KRaft controller role"
            .to_owned(),
    ))
}

/// A boolean key, `true` or `false` in any case (Kafka's `ConfigDef.Type.BOOLEAN`).
fn boolean(
    properties: &BTreeMap<String, String>,
    key: &str,
    default: bool,
) -> Result<bool, KraftConfigError> {
    properties.get(key).map_or(Ok(default), |value| {
        value
            .trim()
            .to_ascii_lowercase()
            .parse()
            .map_err(|_| KraftConfigError(format!("Invalid value {value} for configuration {key}")))
    })
}

fn int<T: std::str::FromStr>(
    properties: &BTreeMap<String, String>,
    key: &str,
    default: T,
) -> Result<T, KraftConfigError> {
    properties.get(key).map_or(Ok(default), |value| {
        value
            .trim()
            .parse()
            .map_err(|_| KraftConfigError(format!("Invalid value {value} for configuration {key}")))
    })
}

/// The listener brokers reach each other on (Kafka's `getInterBrokerListenerNameAndSecurityProtocol`
/// and its check): `inter.broker.listener.name`, else the listener named after
/// `security.inter.broker.protocol` (PLAINTEXT); it must be one of `broker_listeners`, the
/// broker's listener names.
pub fn inter_broker_listener(
    properties: &BTreeMap<String, String>,
    broker_listeners: &[String],
) -> Result<String, KraftConfigError> {
    let named = properties.get("inter.broker.listener.name").map(|n| n.trim().to_ascii_uppercase());
    let by_protocol = properties.get("security.inter.broker.protocol");
    let name = match (named, by_protocol) {
        (Some(_), Some(_)) => {
            return Err(KraftConfigError(
                "Only one of inter.broker.listener.name and security.inter.broker.protocol should \
                 be set."
                    .to_owned(),
            ));
        }
        (Some(name), None) => name,
        (None, Some(protocol)) => protocol.trim().to_ascii_uppercase(),
        (None, None) => "PLAINTEXT".to_owned(),
    };
    if broker_listeners.iter().any(|l| l.eq_ignore_ascii_case(&name)) {
        return Ok(name);
    }
    Err(KraftConfigError(format!(
        "inter.broker.listener.name must be a listener name defined in advertised.listeners. The \
         valid options based on currently configured listeners are {}",
        broker_listeners.join(",")
    )))
}

impl KraftConfig {
    /// The addresses a broker reaches the quorum at: the voters', else the bootstrap servers.
    pub fn quorum_addresses(&self) -> Vec<String> {
        if self.voters.is_empty() {
            self.bootstrap_servers.clone()
        } else {
            self.voters.values().map(Voter::address).collect()
        }
    }

    /// Reads the KRaft keys; `Ok(None)` when `process.roles` is unset.
    pub fn from_properties(
        properties: &BTreeMap<String, String>,
    ) -> Result<Option<Self>, KraftConfigError> {
        let Some(roles) = process_roles(properties)? else { return Ok(None) };
        let node_id = properties.get("node.id").ok_or_else(|| {
            KraftConfigError(
                "Missing required configuration \"node.id\" which has no default value.".to_owned(),
            )
        })?;
        let node_id: i32 = node_id.trim().parse().map_err(|_| {
            KraftConfigError(format!("Invalid value {node_id} for configuration node.id"))
        })?;
        let voters = parse_voters(&list(properties, "controller.quorum.voters"))?;
        let bootstrap_servers =
            parse_bootstrap_servers(&list(properties, "controller.quorum.bootstrap.servers"))?;
        if voters.is_empty() && bootstrap_servers.is_empty() {
            return Err(KraftConfigError(
                "If using process.roles, either controller.quorum.bootstrap.servers must contain \
                 the set of bootstrap controllers or controller.quorum.voters must contain a \
                 parseable set of controllers."
                    .to_owned(),
            ));
        }
        let controller_listener = if roles.contains(&ProcessRole::Controller) {
            Some(controller_listener(properties, node_id, &voters)?)
        } else {
            None
        };
        let metadata_log_dir = properties
            .get("metadata.log.dir")
            .cloned()
            .or_else(|| list(properties, "log.dirs").into_iter().next())
            .or_else(|| list(properties, "log.dir").into_iter().next())
            .unwrap_or_else(|| "./seglog-data".to_owned());
        let defaults = QuorumTimings::default();
        let timings = QuorumTimings {
            election_timeout_min_ms: int(
                properties,
                "controller.quorum.election.timeout.ms",
                defaults.election_timeout_min_ms,
            )?,
            ..defaults
        };
        let base = timings.election_timeout_min_ms;
        let place = voters.keys().position(|id| *id == node_id).unwrap_or(0);
        let timings = QuorumTimings {
            election_timeout_max_ms: base * 2,
            heartbeat_interval_ms: (base / 5).max(10),
            // Kafka counts bytes and time, not entries (`snapshot_after_bytes`, `_interval_ms`).
            snapshot_after_entries: None,
            ..timings
        }
        .for_voter(place, voters.len());
        Ok(Some(Self {
            roles,
            node_id,
            voters,
            bootstrap_servers,
            controller_listener,
            metadata_log_dir: PathBuf::from(metadata_log_dir),
            broker_session_timeout_ms: int(properties, "broker.session.timeout.ms", 9_000)?,
            eligible_leader_replicas: boolean(properties, "eligible.leader.replicas.enable", true)?,
            metadata_max_idle_interval_ms: int(properties, "metadata.max.idle.interval.ms", 500)?,
            snapshot_after_bytes: int(
                properties,
                "metadata.log.max.record.bytes.between.snapshots",
                20 * 1024 * 1024,
            )?,
            snapshot_interval_ms: int(
                properties,
                "metadata.log.max.snapshot.interval.ms",
                3_600_000,
            )?,
            timings,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    const CONTROLLER: [(&str, &str); 5] = [
        ("process.roles", "controller"),
        ("node.id", "2"),
        ("controller.quorum.voters", "1@127.0.0.1:9093,2@localhost:9094,3@[::1]:9095"),
        ("controller.listener.names", "CONTROLLER"),
        ("listeners", "CONTROLLER://127.0.0.1:9094"),
    ];

    #[test]
    fn a_controller_reads_kafkas_keys() {
        let config = KraftConfig::from_properties(&props(&CONTROLLER)).unwrap().unwrap();
        assert_eq!(config.node_id, 2);
        assert_eq!(config.voters.len(), 3);
        assert_eq!(config.voters[&3].address(), "::1:9095");
        assert_eq!(config.controller_listener, Some(("127.0.0.1".to_owned(), 9094)));
        assert_eq!(config.metadata_log_dir, PathBuf::from("./seglog-data"));
        // Voter 2 of 3: its own election range, disjoint from the others'.
        assert_eq!(
            (config.timings.election_timeout_min_ms, config.timings.election_timeout_max_ms),
            (666, 749)
        );
        assert_eq!(KraftConfig::from_properties(&props(&[("node.id", "1")])).unwrap(), None);
    }

    #[test]
    fn kafkas_refusals_in_kafkas_words() {
        let with = |key: &str, value: &str| {
            let mut p = props(&CONTROLLER);
            p.insert(key.to_owned(), value.to_owned());
            KraftConfig::from_properties(&p).unwrap_err().to_string()
        };
        assert_eq!(
            with("process.roles", "controller,zookeeper"),
            "Unknown process role 'zookeeper' (only 'broker' and 'controller' are allowed roles)"
        );
        assert_eq!(
            with("node.id", "4"),
            "If process.roles contains the 'controller' role, the node id 4 must be included in the set of voters controller.quorum.voters=Set(1, 2, 3)"
        );
        assert_eq!(
            with("controller.quorum.voters", "1:9093"),
            "Invalid configuration value for controller.quorum.voters. Each entry should be in the form `{id}@{host}:{port}`."
        );
        assert_eq!(
            with("controller.quorum.voters", "x@h:1"),
            "Failed to parse voter ID as an integer from x"
        );
        assert_eq!(
            with("controller.quorum.voters", "1@h"),
            "Failed to parse host port from entry 1@h for the configuration controller.quorum.voters. Each entry should be in the form `{id}@{host}:{port}`."
        );
        assert!(
            with("listeners", "PLAINTEXT://127.0.0.1:9092")
                .starts_with("controller.listener.names must contain")
        );
    }

    #[test]
    fn inter_broker_listener_follows_kafka() {
        let listeners = ["PLAINTEXT".to_owned(), "INTERNAL".to_owned()];
        let props = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
        };
        assert_eq!(inter_broker_listener(&props(&[]), &listeners).unwrap(), "PLAINTEXT");
        let named = props(&[("inter.broker.listener.name", "internal")]);
        assert_eq!(inter_broker_listener(&named, &listeners).unwrap(), "INTERNAL");
        let both = props(&[
            ("inter.broker.listener.name", "INTERNAL"),
            ("security.inter.broker.protocol", "PLAINTEXT"),
        ]);
        assert!(inter_broker_listener(&both, &listeners).unwrap_err().0.starts_with("Only one of"));
        let missing = props(&[("inter.broker.listener.name", "EXTERNAL")]);
        assert_eq!(
            inter_broker_listener(&missing, &listeners).unwrap_err().0,
            "inter.broker.listener.name must be a listener name defined in advertised.listeners. \
             The valid options based on currently configured listeners are PLAINTEXT,INTERNAL"
        );
    }

    #[test]
    fn a_broker_finds_the_quorum_through_bootstrap_servers() {
        let broker = props(&[
            ("process.roles", "broker"),
            ("node.id", "4"),
            ("controller.quorum.bootstrap.servers", "127.0.0.1:9093,[::1]:9095"),
        ]);
        let config = KraftConfig::from_properties(&broker).unwrap().unwrap();
        assert!(config.voters.is_empty());
        assert_eq!(config.quorum_addresses(), ["127.0.0.1:9093", "[::1]:9095"]);
        let voters = KraftConfig::from_properties(&props(&CONTROLLER)).unwrap().unwrap();
        assert_eq!(voters.quorum_addresses(), ["127.0.0.1:9093", "localhost:9094", "::1:9095"]);
        let mut bad = broker.clone();
        bad.insert("controller.quorum.bootstrap.servers".to_owned(), "127.0.0.1".to_owned());
        assert_eq!(
            KraftConfig::from_properties(&bad).unwrap_err().0,
            "Failed to parse host port from 127.0.0.1 for the configuration \
             controller.quorum.bootstrap.servers. Each entry should be in the form \"{host}:{port}\""
        );
        let mut controller = props(&CONTROLLER);
        controller.remove("controller.quorum.voters");
        controller.insert("controller.quorum.bootstrap.servers".to_owned(), "h:1".to_owned());
        assert!(
            KraftConfig::from_properties(&controller).unwrap_err().0.starts_with(
                "controller.quorum.bootstrap.servers without controller.quorum.voters"
            )
        );
    }
}
