//! `listeners`, `advertised.listeners` and `listener.security.protocol.map` (Kafka's
//! `EndPoint` and the listener part of `KafkaConfig`): several named listeners, each with a
//! security protocol, its bound address and what clients are told to connect to.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;

use seglog_storage::config::ConfigError;

use super::{ADVERTISED_LISTENERS, LISTENERS, parse_host_port, resolve};

/// `listener.security.protocol.map`.
pub const LISTENER_SECURITY_PROTOCOL_MAP: &str = "listener.security.protocol.map";
/// Kafka's default `listener.security.protocol.map`.
pub const LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// Kafka's `SecurityProtocol`: how a listener's connections are carried and authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SecurityProtocol {
    /// TCP, no authentication (principal `User:ANONYMOUS`).
    Plaintext,
    /// TLS; with `ssl.client.auth`, the client certificate names the principal.
    Ssl,
    /// SASL over TCP.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name (`SASL_SSL`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol of a Kafka name, case-insensitively.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Plaintext, Self::Ssl, Self::SaslPlaintext, Self::SaslSsl]
            .into_iter()
            .find(|protocol| protocol.name().eq_ignore_ascii_case(name))
    }

    /// Whether connections are TLS.
    pub fn is_tls(self) -> bool {
        self == Self::Ssl || self == Self::SaslSsl
    }

    /// Whether clients authenticate with SASL.
    pub fn is_sasl(self) -> bool {
        self == Self::SaslPlaintext || self == Self::SaslSsl
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One listener (Kafka's `EndPoint`), with what it advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// The listener name (`PLAINTEXT`, `SASL_SSL`, `INTERNAL`, ...), upper case as Kafka keeps it.
    pub name: String,
    /// Its security protocol, from `listener.security.protocol.map`.
    pub protocol: SecurityProtocol,
    /// The address to bind.
    pub bind: SocketAddr,
    /// The host clients are told to connect to (`advertised.listeners`), when it is not the
    /// bound address.
    pub advertised_host: Option<String>,
    /// The port clients are told to connect to; `None` means the bound port.
    pub advertised_port: Option<u16>,
}

impl Listener {
    /// The `listeners` entry (`SASL_SSL://127.0.0.1:9094`).
    pub fn entry(&self) -> String {
        format!("{}://{}", self.name, self.bind)
    }

    /// The key prefix of this listener's own settings (`listener.name.sasl_ssl.`).
    pub fn key_prefix(&self) -> String {
        format!("listener.name.{}.", self.name.to_ascii_lowercase())
    }
}

/// Reads `listener.security.protocol.map` (`NAME:PROTOCOL,...`).
fn protocol_map(
    properties: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, SecurityProtocol>, ConfigError> {
    let key = LISTENER_SECURITY_PROTOCOL_MAP;
    let value = properties.get(key).map_or(LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT, String::as_str);
    let mut map = BTreeMap::new();
    for item in value.split(',').map(str::trim).filter(|item| !item.is_empty()) {
        let Some((name, protocol)) = item.split_once(':') else {
            return Err(ConfigError::invalid(key, value, format!("{item:?} is not NAME:PROTOCOL")));
        };
        let Some(protocol) = SecurityProtocol::from_name(protocol.trim()) else {
            return Err(ConfigError::invalid(
                key,
                value,
                format!(
                    "{:?} is not a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)",
                    protocol.trim()
                ),
            ));
        };
        if map.insert(name.trim().to_ascii_uppercase(), protocol).is_some() {
            return Err(ConfigError::invalid(key, value, format!("{name:?} is listed twice")));
        }
    }
    Ok(map)
}

/// Splits a `listeners`-style value into `(name, host, port)` entries. A bare `host:port` (a
/// seglog shorthand) is the `PLAINTEXT` listener.
fn entries(key: &str, value: &str) -> Result<Vec<(String, String, u16)>, ConfigError> {
    let mut out: Vec<(String, String, u16)> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|item| !item.is_empty()) {
        let (name, address) = match item.split_once("://") {
            Some((name, address)) => (name.trim().to_ascii_uppercase(), address),
            None => ("PLAINTEXT".to_owned(), item),
        };
        if name.is_empty() {
            return Err(ConfigError::invalid(key, value, format!("{item:?} has no listener name")));
        }
        if out.iter().any(|(other, _, _)| *other == name) {
            return Err(ConfigError::invalid(
                key,
                value,
                format!("each listener must have a different name: {name} is listed twice"),
            ));
        }
        let (host, port) = parse_host_port(key, value, address)?;
        out.push((name, host, port));
    }
    if out.is_empty() {
        return Err(ConfigError::invalid(key, value, "no listener is given"));
    }
    Ok(out)
}

/// The listeners of `listeners`, `advertised.listeners` and `listener.security.protocol.map`,
/// checked as Kafka checks them (unique names and ports, a protocol for every name, an
/// advertised listener only for a listener that exists).
pub fn parse_listeners(
    properties: &BTreeMap<String, String>,
    default: &str,
) -> Result<Vec<Listener>, ConfigError> {
    let map = protocol_map(properties)?;
    let value = properties.get(LISTENERS).map_or(default, String::as_str);
    let mut listeners = Vec::new();
    for (name, host, port) in entries(LISTENERS, value)? {
        let Some(&protocol) = map.get(&name) else {
            return Err(ConfigError::invalid(
                LISTENERS,
                value,
                format!(
                    "no security protocol is defined for listener {name} (add it to \
                     {LISTENER_SECURITY_PROTOCOL_MAP})"
                ),
            ));
        };
        let bind = resolve(LISTENERS, value, &host, port)?;
        if port != 0 && listeners.iter().any(|l: &Listener| l.bind.port() == port) {
            return Err(ConfigError::invalid(
                LISTENERS,
                value,
                format!("each listener must have a different port: {port} is used twice"),
            ));
        }
        listeners.push(Listener {
            name,
            protocol,
            bind,
            advertised_host: None,
            advertised_port: None,
        });
    }
    if let Some(value) = properties.get(ADVERTISED_LISTENERS) {
        for (name, host, port) in entries(ADVERTISED_LISTENERS, value)? {
            let Some(listener) = listeners.iter_mut().find(|l| l.name == name) else {
                return Err(ConfigError::invalid(
                    ADVERTISED_LISTENERS,
                    value,
                    format!("{name} is advertised but is not one of the listeners"),
                ));
            };
            listener.advertised_host = Some(host);
            listener.advertised_port = Some(port);
        }
    }
    Ok(listeners)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn several_named_listeners_with_their_protocols() {
        let listeners = parse_listeners(
            &props(&[
                (
                    "listeners",
                    "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094,internal://:9095",
                ),
                (
                    "listener.security.protocol.map",
                    "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,INTERNAL:SSL",
                ),
                ("advertised.listeners", "SASL_SSL://kafka.example:19094"),
            ]),
            "127.0.0.1:9092",
        )
        .expect("parses");
        let names: Vec<_> = listeners.iter().map(|l| (l.name.as_str(), l.protocol)).collect();
        assert_eq!(
            names,
            [
                ("PLAINTEXT", SecurityProtocol::Plaintext),
                ("SASL_SSL", SecurityProtocol::SaslSsl),
                ("INTERNAL", SecurityProtocol::Ssl)
            ]
        );
        assert_eq!(listeners[2].bind.to_string(), "0.0.0.0:9095");
        assert_eq!(listeners[1].advertised_host.as_deref(), Some("kafka.example"));
        assert_eq!(listeners[1].advertised_port, Some(19094));
        assert_eq!(listeners[0].advertised_host, None);
        assert_eq!(listeners[2].key_prefix(), "listener.name.internal.");
    }

    #[test]
    fn bare_address_is_plaintext() {
        let listeners = parse_listeners(&BTreeMap::new(), "127.0.0.1:9092").expect("default");
        assert_eq!(listeners.len(), 1);
        assert_eq!(listeners[0].entry(), "PLAINTEXT://127.0.0.1:9092");
    }

    #[test]
    fn kafka_refusals_name_the_problem() {
        let cases = [
            (
                vec![("listeners", "FOO://:9092")],
                "no security protocol is defined for listener FOO",
            ),
            (
                vec![("listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093")],
                "PLAINTEXT is listed twice",
            ),
            (vec![("listeners", "PLAINTEXT://:9092,SSL://:9092")], "9092 is used twice"),
            (
                vec![("listeners", "PLAINTEXT://:9092"), ("advertised.listeners", "SSL://h:1")],
                "SSL is advertised but is not one of the listeners",
            ),
            (
                vec![("listener.security.protocol.map", "A:TLS")],
                "\"TLS\" is not a security protocol",
            ),
        ];
        for (pairs, expected) in cases {
            let error = parse_listeners(&props(&pairs), "127.0.0.1:9092").expect_err("refused");
            assert!(error.to_string().contains(expected), "{pairs:?}: {error}");
        }
    }
}
