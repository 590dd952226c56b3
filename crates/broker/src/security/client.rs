//! The client side of a listener's security (Kafka's `ChannelBuilders.clientChannelBuilder`,
//! `SslFactory` in client mode and `SaslClientAuthenticator`): how a broker connects to another
//! on `inter.broker.listener.name`, with the listener's own TLS settings and its
//! `sasl.mechanism.inter.broker.protocol` login.
//!
//! TLS verifies the peer with the listener's truststore (and its host name unless
//! `ssl.endpoint.identification.algorithm` is empty) and offers the keystore as the client
//! certificate. SASL sends SaslHandshake v1, then SaslAuthenticate v2 rounds: PLAIN's one
//! message, or SCRAM's client-first and client-final, whose server signature is checked.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use super::plain::{PLAIN_LOGIN_MODULE, PlainUsers, SCRAM_LOGIN_MODULE};
use super::scram::{ScramClient, ScramMechanism};
use super::tls::client_config;
use crate::config::SecurityProtocol;
use crate::config::security::{SASL_MECHANISM_INTER_BROKER_PROTOCOL, SecurityConfig};
use crate::wire::{Client, WireError};

/// Why a listener's client side cannot be set up (found at start, before anything is served).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientSecurityError {
    /// The listener is not among the broker's.
    #[error("inter-broker listener {listener} is not one of the broker's listeners")]
    NoListener { listener: String },
    /// The listener's TLS settings cannot make a client.
    #[error("inter-broker listener {listener}: {reason}")]
    Tls { listener: String, reason: String },
    /// The inter-broker mechanism is one seglog cannot log in with, or the listener does not
    /// enable it.
    #[error("inter-broker listener {listener}: {reason}")]
    Mechanism { listener: String, reason: String },
    /// The mechanism's `sasl.jaas.config` is missing or does not give the broker's login.
    #[error("inter-broker listener {listener}: {key}: {reason}")]
    Login { listener: String, key: String, reason: String },
}

/// A broker's SASL login as a client. `Debug` hides the password.
#[derive(Clone)]
struct SaslLogin {
    mechanism: String,
    username: String,
    password: String,
}

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslLogin")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"[hidden]")
            .finish()
    }
}

/// How this broker connects as a client to a listener of another broker.
#[derive(Debug, Clone)]
pub struct ClientSecurity {
    protocol: SecurityProtocol,
    tls: Option<Arc<rustls::ClientConfig>>,
    sasl: Option<SaslLogin>,
}

impl Default for ClientSecurity {
    fn default() -> Self {
        Self::plaintext()
    }
}

impl ClientSecurity {
    /// Plain TCP, no authentication.
    pub fn plaintext() -> Self {
        Self { protocol: SecurityProtocol::Plaintext, tls: None, sasl: None }
    }

    /// The security protocol this client speaks.
    pub fn protocol(&self) -> SecurityProtocol {
        self.protocol
    }

    /// The client side of the broker's listener `listener` (Kafka's inter-broker channel):
    /// its TLS settings as a client, and for SASL the login of
    /// `sasl.mechanism.inter.broker.protocol` from the mechanism's `sasl.jaas.config`.
    pub fn inter_broker(
        security: &SecurityConfig,
        listener: &str,
    ) -> Result<Self, ClientSecurityError> {
        let Some(own) = security.listeners.iter().find(|l| l.name.eq_ignore_ascii_case(listener))
        else {
            return Err(ClientSecurityError::NoListener { listener: listener.to_owned() });
        };
        let tls = match &own.tls {
            Some(tls) => Some(Arc::new(client_config(tls).map_err(|error| {
                ClientSecurityError::Tls { listener: own.name.clone(), reason: error.to_string() }
            })?)),
            None => None,
        };
        let sasl = match &own.sasl {
            Some(sasl) => {
                let mechanism = security.sasl_mechanism_inter_broker_protocol.clone();
                let refused = |reason: String| ClientSecurityError::Mechanism {
                    listener: own.name.clone(),
                    reason,
                };
                if !sasl.enabled_mechanisms.contains(&mechanism) {
                    return Err(refused(format!(
                        "{SASL_MECHANISM_INTER_BROKER_PROTOCOL} must be included in \
                         sasl.enabled.mechanisms when SASL is used for inter-broker \
                         communication ({mechanism} is not among {})",
                        sasl.enabled_mechanisms.join(",")
                    )));
                }
                let module = match mechanism.as_str() {
                    "PLAIN" => PLAIN_LOGIN_MODULE,
                    "SCRAM-SHA-256" | "SCRAM-SHA-512" => SCRAM_LOGIN_MODULE,
                    _ => {
                        return Err(refused(format!(
                            "{SASL_MECHANISM_INTER_BROKER_PROTOCOL}={mechanism}: a broker logs \
                             in to another with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
                        )));
                    }
                };
                let key = format!(
                    "listener.name.{}.{}.sasl.jaas.config",
                    own.name.to_ascii_lowercase(),
                    mechanism.to_ascii_lowercase()
                );
                let login = |reason: String| ClientSecurityError::Login {
                    listener: own.name.clone(),
                    key: key.clone(),
                    reason,
                };
                let jaas = sasl.client_logins.get(&mechanism).ok_or_else(|| {
                    login("not set (nor sasl.jaas.config): the broker has no login".to_owned())
                })?;
                let (username, password) = PlainUsers::client_login(jaas.expose(), module)
                    .map_err(|error| login(error.to_string()))?;
                Some(SaslLogin { mechanism, username, password })
            }
            None => None,
        };
        Ok(Self { protocol: own.protocol, tls, sasl })
    }

    /// Connects to `host:port` and authenticates.
    pub async fn connect(&self, host: &str, port: u16) -> Result<Client, WireError> {
        let tcp = TcpStream::connect((host, port)).await?;
        tcp.set_nodelay(true)?;
        let mut client = match &self.tls {
            None => Client::over(tcp),
            Some(config) => {
                let tls_error =
                    |source| WireError::Tls { server: format!("{host}:{port}"), source };
                let name = ServerName::try_from(host.to_owned()).map_err(|error| {
                    tls_error(std::io::Error::new(std::io::ErrorKind::InvalidInput, error))
                })?;
                let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
                Client::over(connector.connect(name, tcp).await.map_err(tls_error)?)
            }
        };
        if let Some(login) = &self.sasl {
            authenticate(&mut client, login).await?;
        }
        Ok(client)
    }
}

/// One SaslAuthenticate round: the server's bytes, or its refusal.
async fn round(client: &mut Client, mechanism: &str, bytes: Vec<u8>) -> Result<Bytes, WireError> {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes));
    let response = client.send(&request, 2).await?;
    if response.error_code != 0 {
        return Err(WireError::Authentication {
            mechanism: mechanism.to_owned(),
            message: response
                .error_message
                .map_or_else(|| format!("error code {}", response.error_code), |m| m.to_string()),
        });
    }
    Ok(response.auth_bytes)
}

/// SaslHandshake and SaslAuthenticate with `login` (Kafka's `SaslClientAuthenticator`).
async fn authenticate(client: &mut Client, login: &SaslLogin) -> Result<(), WireError> {
    let mechanism = login.mechanism.as_str();
    let failed =
        |message: String| WireError::Authentication { mechanism: mechanism.to_owned(), message };
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(mechanism.to_owned()));
    let answer = client.send(&handshake, 1).await?;
    if answer.error_code != 0 {
        let enabled: Vec<String> = answer.mechanisms.iter().map(ToString::to_string).collect();
        return Err(failed(format!(
            "the peer does not enable it (error code {}; it enables {})",
            answer.error_code,
            enabled.join(",")
        )));
    }
    if mechanism == "PLAIN" {
        let message = format!("\0{}\0{}", login.username, login.password).into_bytes();
        round(client, mechanism, message).await?;
        return Ok(());
    }
    let scram = ScramMechanism::from_name(mechanism)
        .ok_or_else(|| failed("not a mechanism a broker logs in with".to_owned()))?;
    let mut scram = ScramClient::new(scram, &login.username, &login.password)
        .map_err(|error| failed(error.to_string()))?;
    let server_first = round(client, mechanism, scram.client_first()).await?;
    let client_final =
        scram.client_final(&server_first).map_err(|error| failed(error.to_string()))?;
    let server_final = round(client, mechanism, client_final).await?;
    scram.verify_server_final(&server_final).map_err(|error| failed(error.to_string()))
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
