//! How the quorum's connections are carried (Kafka's controller listener security): the
//! voters' RPCs to each other, the leader's to the brokers' learners, and the brokers'
//! registrations, heartbeats and forwarded changes to the voters.
//!
//! The controller listener (the first of `controller.listener.names`) is PLAINTEXT or SSL, by
//! `listener.security.protocol.map`. With SSL every quorum connection is TLS both ways with the
//! listener's `ssl.*` settings: the keystore is each node's certificate as server and as client,
//! the truststore checks the other side's, and `ssl.client.auth` must be `required`, since the
//! quorum's messages carry no other authentication. With an authorizer, the client
//! certificate's principal (mapped by `ssl.principal.mapping.rules`) must also be one of
//! `super.users`, as Kafka's controller requires CLUSTER_ACTION of brokers and voters.
//! SASL is not offered on the controller listener (docs/cluster.md).

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use crate::config::security::{ClientAuth, SecurityConfig, security_config};
use crate::config::{Listener, SecurityProtocol};
use crate::security::acl::parse_super_users;
use crate::security::principal::{SslPrincipalMapper, ssl_principal};
use crate::security::tls::{ReloadingTls, client_config};
use crate::wire::WireStream;

/// How long a quorum connection's TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the controller listener's security cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("controller listener {listener}: {reason}")]
pub struct QuorumSecurityError {
    pub listener: String,
    pub reason: String,
}

/// A quorum connection: TCP, or TLS over TCP.
pub type QuorumStream = Box<dyn WireStream>;

/// TLS on the quorum: the acceptor, the client side, and who may connect.
struct QuorumTls {
    server: ReloadingTls,
    client: Arc<rustls::ClientConfig>,
    mapper: SslPrincipalMapper,
    /// With an authorizer, the principals allowed on the quorum (`super.users`).
    super_users: Option<Vec<String>>,
}

/// The security of the quorum's connections, shared by a node's server and its clients.
#[derive(Default)]
pub struct QuorumTransport {
    listener: String,
    tls: Option<QuorumTls>,
}

impl std::fmt::Debug for QuorumTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuorumTransport")
            .field("listener", &self.listener)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl QuorumTransport {
    /// Plain TCP.
    pub fn plaintext() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Whether connections are TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The controller listener's security from a node's configuration. For a tool's
    /// `--command-config` without `controller.listener.names`, the listener is named after
    /// `security.protocol` (PLAINTEXT), whose `ssl.*` keys are read unprefixed.
    pub fn from_properties(
        properties: &BTreeMap<String, String>,
    ) -> Result<Arc<Self>, QuorumSecurityError> {
        let name = properties
            .get("controller.listener.names")
            .and_then(|names| names.split(',').map(str::trim).find(|n| !n.is_empty()))
            .or_else(|| properties.get("security.protocol").map(|p| p.trim()))
            .unwrap_or("PLAINTEXT")
            .to_ascii_uppercase();
        let refuse = |reason: String| QuorumSecurityError { listener: name.clone(), reason };
        let protocol = protocol_of(properties, &name).map_err(refuse)?;
        let listener = Listener {
            name: name.clone(),
            protocol,
            bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            advertised_host: None,
            advertised_port: None,
        };
        let security = security_config(properties, std::slice::from_ref(&listener))
            .map_err(|error| refuse(error.to_string()))?;
        Self::for_listener(&security, &name).map(Arc::new)
    }

    fn for_listener(security: &SecurityConfig, name: &str) -> Result<Self, QuorumSecurityError> {
        let refuse = |reason: String| QuorumSecurityError { listener: name.to_owned(), reason };
        let Some(own) = security.listeners.first() else {
            return Err(refuse("not configured".to_owned()));
        };
        match own.protocol {
            SecurityProtocol::Plaintext => {
                return Ok(Self { listener: name.to_owned(), tls: None });
            }
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {
                return Err(refuse(format!(
                    "{} is not offered on the controller listener; use SSL with \
                     ssl.client.auth=required (docs/cluster.md)",
                    own.protocol
                )));
            }
            SecurityProtocol::Ssl => {}
        }
        let Some(tls) = &own.tls else { return Err(refuse("SSL without TLS settings".to_owned())) };
        if tls.client_auth != ClientAuth::Required {
            return Err(refuse(
                "SSL needs ssl.client.auth=required: the quorum's messages carry no other \
                 authentication, so every node proves itself with its certificate"
                    .to_owned(),
            ));
        }
        let server = ReloadingTls::new(tls.clone()).map_err(|e| refuse(e.to_string()))?;
        let client = Arc::new(client_config(tls).map_err(|e| refuse(e.to_string()))?);
        let mapper = SslPrincipalMapper::from_rules(&tls.principal_mapping_rules)
            .map_err(|e| refuse(e.to_string()))?;
        let super_users = match &security.authorizer {
            Some(authorizer) => Some(
                parse_super_users(&authorizer.super_users).map_err(|e| refuse(e.to_string()))?,
            ),
            None => None,
        };
        Ok(Self {
            listener: name.to_owned(),
            tls: Some(QuorumTls { server, client, mapper, super_users }),
        })
    }

    /// Connects to the quorum endpoint at `addr` (`host:port`) within `timeout`.
    pub(crate) async fn connect(&self, addr: &str, timeout: Duration) -> io::Result<QuorumStream> {
        let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
        let tcp = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| timed_out())??;
        tcp.set_nodelay(true)?;
        let Some(tls) = &self.tls else { return Ok(Box::new(tcp)) };
        let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let connector = tokio_rustls::TlsConnector::from(Arc::clone(&tls.client));
        let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, connector.connect(name, tcp))
            .await
            .map_err(|_| timed_out())??;
        Ok(Box::new(stream))
    }

    /// Takes an accepted connection: the TLS handshake and the client's principal when the
    /// listener is SSL. An error closes the connection.
    pub(crate) async fn accept(&self, tcp: TcpStream) -> io::Result<QuorumStream> {
        let _ = tcp.set_nodelay(true);
        let Some(tls) = &self.tls else { return Ok(Box::new(tcp)) };
        if let Err(error) = tls.server.reload_if_changed() {
            tracing::warn!(listener = %self.listener, %error, "cannot reload the quorum's TLS files; keeping the old ones");
        }
        let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.server.acceptor().accept(tcp))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
        if let Some(super_users) = &tls.super_users {
            let certificate =
                stream.get_ref().1.peer_certificates().and_then(|chain| chain.first().cloned());
            let principal = ssl_principal(&tls.mapper, certificate.as_deref())
                .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?
                .to_string();
            if !super_users.contains(&principal) {
                tracing::warn!(
                    listener = %self.listener, %principal,
                    "refused a quorum connection: the principal is not one of super.users"
                );
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{principal} is not one of super.users"),
                ));
            }
        }
        Ok(Box::new(stream))
    }
}

/// The security protocol of controller listener `name` (Kafka's
/// `effectiveListenerSecurityProtocolMap`): from `listener.security.protocol.map` when it is
/// set; otherwise a protocol's own name, or PLAINTEXT while no listener uses SSL or SASL.
fn protocol_of(
    properties: &BTreeMap<String, String>,
    name: &str,
) -> Result<SecurityProtocol, String> {
    let key = "listener.security.protocol.map";
    let explicit = properties.get(key);
    let map = explicit
        .map_or(crate::config::listeners::LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT, String::as_str);
    for item in map.split(',').map(str::trim) {
        if let Some((listener, protocol)) = item.split_once(':')
            && listener.trim().eq_ignore_ascii_case(name)
        {
            return SecurityProtocol::from_name(protocol.trim())
                .ok_or_else(|| format!("{protocol:?} is not a security protocol"));
        }
    }
    let secure = |listener: &str| {
        SecurityProtocol::from_name(listener.trim())
            .is_some_and(|p| p != SecurityProtocol::Plaintext)
    };
    let names = |key: &str| -> Vec<String> {
        properties
            .get(key)
            .map(|v| {
                v.split(',')
                    .map(|l| l.split_once("://").map_or(l, |(n, _)| n).trim().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let any_secure = names("controller.listener.names").iter().any(|n| secure(n))
        || names("listeners").iter().any(|n| secure(n));
    if explicit.is_none() && !any_secure {
        return Ok(SecurityProtocol::Plaintext);
    }
    Err(format!(
        "Controller listener with name {name} defined in controller.listener.names not found in \
         {key}  (an explicit security mapping for each controller listener is required if {key} \
         is non-empty, or if there are security protocols other than PLAINTEXT in use)"
    ))
}
