//! The security settings (Kafka's `KafkaConfig` security keys, `SslConfigs`, `SaslConfigs`,
//! `BrokerSecurityConfigs`): per listener TLS and SASL, the authorizer, re-authentication and
//! the limits of unauthenticated connections, quotas' windows and per-IP connection limits.
//!
//! A listener's key is looked up as `listener.name.<listener>.<key>` first, then `<key>`, as
//! Kafka does; SASL mechanism keys also as `listener.name.<listener>.<mechanism>.<key>`.
//! Secret values (`sasl.jaas.config`, `ssl.keystore.key`, passwords) are kept as [`Secret`],
//! whose `Debug` never shows them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use seglog_storage::config::{ConfigError, Reader, Validator};

use super::listeners::{Listener, SecurityProtocol};

/// `ssl.keystore.location`.
pub const SSL_KEYSTORE_LOCATION: &str = "ssl.keystore.location";
/// `ssl.keystore.type`.
pub const SSL_KEYSTORE_TYPE: &str = "ssl.keystore.type";
/// `ssl.keystore.certificate.chain`.
pub const SSL_KEYSTORE_CERTIFICATE_CHAIN: &str = "ssl.keystore.certificate.chain";
/// `ssl.keystore.key`.
pub const SSL_KEYSTORE_KEY: &str = "ssl.keystore.key";
/// `ssl.key.password`.
pub const SSL_KEY_PASSWORD: &str = "ssl.key.password";
/// `ssl.truststore.location`.
pub const SSL_TRUSTSTORE_LOCATION: &str = "ssl.truststore.location";
/// `ssl.truststore.type`.
pub const SSL_TRUSTSTORE_TYPE: &str = "ssl.truststore.type";
/// `ssl.truststore.certificates`.
pub const SSL_TRUSTSTORE_CERTIFICATES: &str = "ssl.truststore.certificates";
/// `ssl.client.auth`.
pub const SSL_CLIENT_AUTH: &str = "ssl.client.auth";
/// `ssl.principal.mapping.rules`.
pub const SSL_PRINCIPAL_MAPPING_RULES: &str = "ssl.principal.mapping.rules";
/// `ssl.enabled.protocols`.
pub const SSL_ENABLED_PROTOCOLS: &str = "ssl.enabled.protocols";
/// `ssl.endpoint.identification.algorithm`: `https` (a client checks the server's host name
/// against its certificate) or empty (it does not).
pub const SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: &str = "ssl.endpoint.identification.algorithm";
/// `seglog.ssl.reload.interval.ms`: how often the key and trust files are checked for a change.
pub const SSL_RELOAD_INTERVAL_MS: &str = "seglog.ssl.reload.interval.ms";
/// `sasl.enabled.mechanisms`.
pub const SASL_ENABLED_MECHANISMS: &str = "sasl.enabled.mechanisms";
/// `sasl.jaas.config` (per mechanism: `listener.name.<l>.plain.sasl.jaas.config`).
pub const SASL_JAAS_CONFIG: &str = "sasl.jaas.config";
/// `sasl.mechanism.inter.broker.protocol`: the mechanism a broker authenticates with to another
/// on a SASL inter-broker listener.
pub const SASL_MECHANISM_INTER_BROKER_PROTOCOL: &str = "sasl.mechanism.inter.broker.protocol";
/// The mechanisms a broker can log in with as a client (its `username`/`password` JAAS login).
pub const SASL_CLIENT_MECHANISMS: [&str; 3] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];
/// `seglog.sasl.plain.credentials.file`: `name=password` lines for PLAIN.
pub const SASL_PLAIN_CREDENTIALS_FILE: &str = "seglog.sasl.plain.credentials.file";
/// `sasl.oauthbearer.jwks.endpoint.url` (a `file:` URL in seglog).
pub const SASL_OAUTHBEARER_JWKS_ENDPOINT_URL: &str = "sasl.oauthbearer.jwks.endpoint.url";
/// `sasl.oauthbearer.expected.issuer`.
pub const SASL_OAUTHBEARER_EXPECTED_ISSUER: &str = "sasl.oauthbearer.expected.issuer";
/// `sasl.oauthbearer.expected.audience`.
pub const SASL_OAUTHBEARER_EXPECTED_AUDIENCE: &str = "sasl.oauthbearer.expected.audience";
/// `sasl.oauthbearer.sub.claim.name`.
pub const SASL_OAUTHBEARER_SUB_CLAIM_NAME: &str = "sasl.oauthbearer.sub.claim.name";
/// `sasl.oauthbearer.scope.claim.name`.
pub const SASL_OAUTHBEARER_SCOPE_CLAIM_NAME: &str = "sasl.oauthbearer.scope.claim.name";
/// `sasl.oauthbearer.clock.skew.seconds`.
pub const SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS: &str = "sasl.oauthbearer.clock.skew.seconds";
/// `connections.max.reauth.ms` (KIP-368).
pub const CONNECTIONS_MAX_REAUTH_MS: &str = "connections.max.reauth.ms";
/// `connection.failed.authentication.delay.ms`.
pub const CONNECTION_FAILED_AUTHENTICATION_DELAY_MS: &str =
    "connection.failed.authentication.delay.ms";
/// `sasl.server.max.receive.size`: the largest frame before authentication.
pub const SASL_SERVER_MAX_RECEIVE_SIZE: &str = "sasl.server.max.receive.size";
/// `seglog.authentication.timeout.ms`: TLS handshake and SASL must finish within this.
pub const AUTHENTICATION_TIMEOUT_MS: &str = "seglog.authentication.timeout.ms";
/// `authorizer.class.name`.
pub const AUTHORIZER_CLASS_NAME: &str = "authorizer.class.name";
/// The authorizer seglog implements (its semantics, not its code).
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";
/// The ZooKeeper-era name, accepted as the same authorizer.
pub const ACL_AUTHORIZER: &str = "kafka.security.authorizer.AclAuthorizer";
/// `super.users`.
pub const SUPER_USERS: &str = "super.users";
/// `allow.everyone.if.no.acl.found`.
pub const ALLOW_EVERYONE_IF_NO_ACL_FOUND: &str = "allow.everyone.if.no.acl.found";
/// `quota.window.num`.
pub const QUOTA_WINDOW_NUM: &str = "quota.window.num";
/// `quota.window.size.seconds`.
pub const QUOTA_WINDOW_SIZE_SECONDS: &str = "quota.window.size.seconds";
/// `max.connections.per.ip`.
pub const MAX_CONNECTIONS_PER_IP: &str = "max.connections.per.ip";
/// `max.connections.per.ip.overrides`.
pub const MAX_CONNECTIONS_PER_IP_OVERRIDES: &str = "max.connections.per.ip.overrides";

/// The SASL mechanisms seglog serves.
pub const SASL_MECHANISMS: [&str; 4] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"];
/// seglog's default `sasl.enabled.mechanisms` (Kafka's is GSSAPI, which seglog does not serve).
pub const SASL_ENABLED_MECHANISMS_DEFAULT: &str = "SCRAM-SHA-256,SCRAM-SHA-512";

/// Whether a key's value is secret: never shown by DescribeConfigs, `Debug` or a log line
/// (Kafka's `ConfigDef.Type.PASSWORD` keys, and `sasl.jaas.config`).
pub fn is_sensitive(key: &str) -> bool {
    key.ends_with(SASL_JAAS_CONFIG)
        || key.ends_with(SSL_KEYSTORE_KEY)
        || key.ends_with("password")
        || key.ends_with("ssl.truststore.certificates.password")
}

/// A secret value: its `Debug` and `Display` print `[hidden]`, as Kafka's `Password` does.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value, for the one place that uses it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    None,
    /// A client certificate is asked for; a client without one is `User:ANONYMOUS`.
    Requested,
    /// A client certificate signed by the truststore is required.
    Required,
}

/// Where a PEM keystore or truststore comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemSource {
    /// A file (`ssl.keystore.location`, `ssl.truststore.location`), re-read when it changes.
    File(PathBuf),
    /// The PEM text in the configuration (`ssl.keystore.certificate.chain` with
    /// `ssl.keystore.key`, `ssl.truststore.certificates`).
    Inline { certificates: String, key: Option<Secret> },
}

/// One listener's TLS settings (Kafka's `SslConfigs` with `ssl.keystore.type=PEM`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// The server's certificate chain and private key.
    pub keystore: PemSource,
    /// The CAs that sign client certificates, when clients are asked for one.
    pub truststore: Option<PemSource>,
    /// `ssl.client.auth` (none).
    pub client_auth: ClientAuth,
    /// `ssl.principal.mapping.rules` (DEFAULT).
    pub principal_mapping_rules: String,
    /// `ssl.enabled.protocols` (TLSv1.2,TLSv1.3).
    pub enabled_protocols: Vec<String>,
    /// `ssl.endpoint.identification.algorithm` is `https` (the default): when this broker is
    /// the client (to another broker on this listener), it checks the peer's host name.
    pub endpoint_identification: bool,
}

/// One listener's OAUTHBEARER settings (Kafka's `sasl.oauthbearer.*` keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// `sasl.oauthbearer.jwks.endpoint.url`: a `file:` URL; without it, tokens are checked as
    /// Kafka's unsecured validator checks them (`alg: none`, for tests and development).
    pub jwks_endpoint_url: Option<String>,
    /// `sasl.oauthbearer.expected.issuer`.
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.expected.audience`.
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.sub.claim.name` (sub).
    pub sub_claim_name: String,
    /// `sasl.oauthbearer.scope.claim.name` (scope).
    pub scope_claim_name: String,
    /// `sasl.oauthbearer.clock.skew.seconds` (30).
    pub clock_skew_seconds: u64,
}

/// One listener's SASL settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslConfig {
    /// `sasl.enabled.mechanisms`, upper case.
    pub enabled_mechanisms: Vec<String>,
    /// PLAIN's users: the `user_<name>="<password>"` options of the PLAIN mechanism's
    /// `sasl.jaas.config`, as Kafka's `PlainLoginModule` reads them.
    pub plain_jaas_config: Option<Secret>,
    /// PLAIN's users from a file of `name=password` lines.
    pub plain_credentials_file: Option<PathBuf>,
    /// OAUTHBEARER's validation.
    pub oauth: OAuthConfig,
    /// The `sasl.jaas.config` of each mechanism a broker can log in with as a client
    /// (`listener.name.<l>.<mechanism>.sasl.jaas.config`, else `sasl.jaas.config`), when set:
    /// its `username` and `password` are what the broker sends to another on this listener.
    pub client_logins: BTreeMap<String, Secret>,
}

/// One listener's security: its protocol and what the protocol needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSecurity {
    /// The listener's name.
    pub name: String,
    /// Its protocol.
    pub protocol: SecurityProtocol,
    /// TLS, for SSL and SASL_SSL.
    pub tls: Option<TlsConfig>,
    /// SASL, for SASL_PLAINTEXT and SASL_SSL.
    pub sasl: Option<SaslConfig>,
}

/// The authorizer's settings (`authorizer.class.name` set to the StandardAuthorizer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// `super.users`, as given (`User:admin;User:ops`).
    pub super_users: String,
    /// `allow.everyone.if.no.acl.found` (false).
    pub allow_everyone_if_no_acl_found: bool,
}

/// Everything about who may connect and what they may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityConfig {
    /// One entry per listener, in `listeners` order.
    pub listeners: Vec<ListenerSecurity>,
    /// ACLs are checked when this is set; otherwise every request is allowed, as in Kafka
    /// without `authorizer.class.name`.
    pub authorizer: Option<AuthorizerConfig>,
    /// `connections.max.reauth.ms` (0: sessions do not expire).
    pub connections_max_reauth_ms: u64,
    /// `connection.failed.authentication.delay.ms` (100).
    pub failed_authentication_delay_ms: u64,
    /// `sasl.server.max.receive.size` (524288).
    pub sasl_server_max_receive_size: u32,
    /// `seglog.authentication.timeout.ms` (10000).
    pub authentication_timeout_ms: u64,
    /// `seglog.ssl.reload.interval.ms` (30000).
    pub ssl_reload_interval_ms: u64,
    /// `quota.window.num` (11).
    pub quota_window_num: u32,
    /// `quota.window.size.seconds` (1).
    pub quota_window_size_seconds: u32,
    /// `max.connections.per.ip` (Kafka: `Int.MAX`).
    pub max_connections_per_ip: u32,
    /// `max.connections.per.ip.overrides`, as given.
    pub max_connections_per_ip_overrides: String,
    /// `sasl.mechanism.inter.broker.protocol` (Kafka's default GSSAPI, which seglog does not
    /// speak: a SASL inter-broker listener needs it set).
    pub sasl_mechanism_inter_broker_protocol: String,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        Self {
            listeners: Vec::new(),
            authorizer: None,
            connections_max_reauth_ms: 0,
            failed_authentication_delay_ms: 100,
            sasl_server_max_receive_size: 524_288,
            authentication_timeout_ms: 10_000,
            ssl_reload_interval_ms: 30_000,
            quota_window_num: 11,
            quota_window_size_seconds: 1,
            max_connections_per_ip: i32::MAX.cast_unsigned(),
            max_connections_per_ip_overrides: String::new(),
            sasl_mechanism_inter_broker_protocol: "GSSAPI".to_owned(),
        }
    }
}

/// A listener's view of the properties: `listener.name.<l>.<key>` over `<key>`.
struct ListenerKeys<'a> {
    properties: &'a BTreeMap<String, String>,
    prefix: String,
}

impl ListenerKeys<'_> {
    /// The value and the key it was found under.
    fn get(&self, key: &str) -> Option<(String, &str)> {
        let own = format!("{}{key}", self.prefix);
        if let Some(value) = self.properties.get(&own) {
            return Some((own, value.as_str()));
        }
        self.properties.get(key).map(|value| (key.to_owned(), value.as_str()))
    }

    fn text(&self, key: &str) -> Option<String> {
        self.get(key).map(|(_, value)| value.trim().to_owned()).filter(|v| !v.is_empty())
    }

    fn secret(&self, key: &str) -> Option<Secret> {
        self.get(key).map(|(_, value)| Secret(value.trim().to_owned())).filter(|s| !s.0.is_empty())
    }

    fn list(&self, key: &str, default: &str) -> Vec<String> {
        let value = self.get(key).map_or(default.to_owned(), |(_, value)| value.to_owned());
        value.split(',').map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned).collect()
    }
}

fn pem_type(keys: &ListenerKeys<'_>, key: &str) -> Result<(), ConfigError> {
    match keys.get(key) {
        None => Ok(()),
        Some((_, value)) if value.trim().eq_ignore_ascii_case("PEM") => Ok(()),
        Some((found, value)) => Err(ConfigError::invalid(
            &found,
            value,
            "seglog reads PEM keystores and truststores only (JKS and PKCS12 are not supported: \
             convert them with keytool -importkeystore and openssl pkcs12)",
        )),
    }
}

fn tls_config(keys: &ListenerKeys<'_>, listener: &str) -> Result<TlsConfig, ConfigError> {
    pem_type(keys, SSL_KEYSTORE_TYPE)?;
    pem_type(keys, SSL_TRUSTSTORE_TYPE)?;
    if let Some((found, _)) = keys.get(SSL_KEY_PASSWORD) {
        return Err(ConfigError::invalid(
            &found,
            "[hidden]",
            "encrypted private keys are not supported: give an unencrypted PKCS#8 key \
             (openssl pkcs8 -topk8 -nocrypt) in a file only the broker can read",
        ));
    }
    let keystore = match (
        keys.text(SSL_KEYSTORE_LOCATION),
        keys.text(SSL_KEYSTORE_CERTIFICATE_CHAIN),
        keys.secret(SSL_KEYSTORE_KEY),
    ) {
        (Some(path), None, None) => PemSource::File(PathBuf::from(path)),
        (None, Some(certificates), Some(key)) => PemSource::Inline { certificates, key: Some(key) },
        (None, None, None) => {
            return Err(ConfigError::invalid(
                SSL_KEYSTORE_LOCATION,
                "",
                format!(
                    "listener {listener} uses TLS and needs a keystore: {SSL_KEYSTORE_LOCATION} \
                     (a PEM file with the private key and the certificate chain), or \
                     {SSL_KEYSTORE_CERTIFICATE_CHAIN} with {SSL_KEYSTORE_KEY}"
                ),
            ));
        }
        _ => {
            return Err(ConfigError::invalid(
                SSL_KEYSTORE_LOCATION,
                "",
                format!(
                    "listener {listener}: give either {SSL_KEYSTORE_LOCATION} or both \
                     {SSL_KEYSTORE_CERTIFICATE_CHAIN} and {SSL_KEYSTORE_KEY}"
                ),
            ));
        }
    };
    let truststore =
        match (keys.text(SSL_TRUSTSTORE_LOCATION), keys.text(SSL_TRUSTSTORE_CERTIFICATES)) {
            (Some(path), None) => Some(PemSource::File(PathBuf::from(path))),
            (None, Some(certificates)) => Some(PemSource::Inline { certificates, key: None }),
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    SSL_TRUSTSTORE_LOCATION,
                    "",
                    format!(
                        "give {SSL_TRUSTSTORE_LOCATION} or {SSL_TRUSTSTORE_CERTIFICATES}, not both"
                    ),
                ));
            }
        };
    let client_auth = match keys.get(SSL_CLIENT_AUTH) {
        None => ClientAuth::None,
        Some((found, value)) => match value.trim().to_ascii_lowercase().as_str() {
            "none" | "" => ClientAuth::None,
            "requested" => ClientAuth::Requested,
            "required" => ClientAuth::Required,
            _ => {
                return Err(ConfigError::invalid(
                    &found,
                    value,
                    "expected none, requested or required",
                ));
            }
        },
    };
    if client_auth != ClientAuth::None && truststore.is_none() {
        return Err(ConfigError::invalid(
            SSL_CLIENT_AUTH,
            "",
            format!(
                "listener {listener} asks for client certificates and needs a truststore \
                 ({SSL_TRUSTSTORE_LOCATION} or {SSL_TRUSTSTORE_CERTIFICATES})"
            ),
        ));
    }
    let enabled_protocols = keys.list(SSL_ENABLED_PROTOCOLS, "TLSv1.2,TLSv1.3");
    for protocol in &enabled_protocols {
        if protocol != "TLSv1.2" && protocol != "TLSv1.3" {
            return Err(ConfigError::invalid(
                SSL_ENABLED_PROTOCOLS,
                &enabled_protocols.join(","),
                format!("{protocol} is not served (TLSv1.2 and TLSv1.3 are)"),
            ));
        }
    }
    let endpoint_identification = endpoint_identification(keys)?;
    Ok(TlsConfig {
        keystore,
        truststore,
        client_auth,
        endpoint_identification,
        principal_mapping_rules: keys
            .text(SSL_PRINCIPAL_MAPPING_RULES)
            .unwrap_or_else(|| "DEFAULT".to_owned()),
        enabled_protocols,
    })
}

/// `ssl.endpoint.identification.algorithm`: `https` (the default) or empty.
fn endpoint_identification(keys: &ListenerKeys<'_>) -> Result<bool, ConfigError> {
    match keys.get(SSL_ENDPOINT_IDENTIFICATION_ALGORITHM) {
        None => Ok(true),
        Some((found, value)) => match value.trim().to_ascii_lowercase().as_str() {
            "https" => Ok(true),
            "" => Ok(false),
            _ => Err(ConfigError::invalid(
                &found,
                value,
                "expected https (check the host name) or empty (do not)",
            )),
        },
    }
}

fn sasl_config(keys: &ListenerKeys<'_>, listener: &str) -> Result<SaslConfig, ConfigError> {
    let mut enabled_mechanisms: Vec<String> = keys
        .list(SASL_ENABLED_MECHANISMS, SASL_ENABLED_MECHANISMS_DEFAULT)
        .into_iter()
        .map(|m| m.to_ascii_uppercase())
        .collect();
    enabled_mechanisms.dedup();
    for mechanism in &enabled_mechanisms {
        if !SASL_MECHANISMS.contains(&mechanism.as_str()) {
            return Err(ConfigError::invalid(
                SASL_ENABLED_MECHANISMS,
                &enabled_mechanisms.join(","),
                format!("{mechanism} is not served (seglog serves {})", SASL_MECHANISMS.join(", ")),
            ));
        }
    }
    if enabled_mechanisms.is_empty() {
        return Err(ConfigError::invalid(
            SASL_ENABLED_MECHANISMS,
            "",
            format!("listener {listener} uses SASL and enables no mechanism"),
        ));
    }
    let plain_keys =
        ListenerKeys { properties: keys.properties, prefix: format!("{}plain.", keys.prefix) };
    let oauth_keys = ListenerKeys {
        properties: keys.properties,
        prefix: format!("{}oauthbearer.", keys.prefix),
    };
    let oauth_text = |key: &str| oauth_keys.text(key).or_else(|| keys.text(key));
    let clock_skew_seconds = match oauth_text(SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS) {
        None => 30,
        Some(value) => value.parse().map_err(|_| {
            ConfigError::invalid(
                SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS,
                &value,
                "not a number of seconds",
            )
        })?,
    };
    let client_logins = SASL_CLIENT_MECHANISMS
        .iter()
        .filter_map(|mechanism| {
            let mechanism_keys = ListenerKeys {
                properties: keys.properties,
                prefix: format!("{}{}.", keys.prefix, mechanism.to_ascii_lowercase()),
            };
            let jaas = mechanism_keys
                .secret(SASL_JAAS_CONFIG)
                .or_else(|| keys.secret(SASL_JAAS_CONFIG))?;
            Some(((*mechanism).to_owned(), jaas))
        })
        .collect();
    Ok(SaslConfig {
        enabled_mechanisms,
        client_logins,
        plain_jaas_config: plain_keys.secret(SASL_JAAS_CONFIG),
        plain_credentials_file: plain_keys
            .text(SASL_PLAIN_CREDENTIALS_FILE)
            .or_else(|| keys.text(SASL_PLAIN_CREDENTIALS_FILE))
            .map(PathBuf::from),
        oauth: OAuthConfig {
            jwks_endpoint_url: oauth_text(SASL_OAUTHBEARER_JWKS_ENDPOINT_URL),
            expected_issuer: oauth_text(SASL_OAUTHBEARER_EXPECTED_ISSUER),
            expected_audience: oauth_text(SASL_OAUTHBEARER_EXPECTED_AUDIENCE)
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|a| !a.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            sub_claim_name: oauth_text(SASL_OAUTHBEARER_SUB_CLAIM_NAME)
                .unwrap_or_else(|| "sub".to_owned()),
            scope_claim_name: oauth_text(SASL_OAUTHBEARER_SCOPE_CLAIM_NAME)
                .unwrap_or_else(|| "scope".to_owned()),
            clock_skew_seconds,
        },
    })
}

fn number<T>(
    properties: &BTreeMap<String, String>,
    key: &str,
    default: &T,
    at_least: i64,
) -> Result<T, ConfigError>
where
    T: seglog_storage::config::ConfigValue + Clone,
{
    Reader::new(properties).value(key, default, Validator::AtLeast(at_least))
}

/// Reads the security settings of `listeners`.
pub fn security_config(
    properties: &BTreeMap<String, String>,
    listeners: &[Listener],
) -> Result<SecurityConfig, ConfigError> {
    let defaults = SecurityConfig::default();
    let mut out = Vec::new();
    for listener in listeners {
        let keys = ListenerKeys { properties, prefix: listener.key_prefix() };
        out.push(ListenerSecurity {
            name: listener.name.clone(),
            protocol: listener.protocol,
            tls: if listener.protocol.is_tls() {
                Some(tls_config(&keys, &listener.name)?)
            } else {
                None
            },
            sasl: if listener.protocol.is_sasl() {
                Some(sasl_config(&keys, &listener.name)?)
            } else {
                None
            },
        });
    }
    let authorizer = match properties.get(AUTHORIZER_CLASS_NAME).map(|v| v.trim()) {
        None | Some("") => None,
        Some(STANDARD_AUTHORIZER | ACL_AUTHORIZER) => Some(AuthorizerConfig {
            super_users: properties.get(SUPER_USERS).cloned().unwrap_or_default(),
            allow_everyone_if_no_acl_found: Reader::new(properties).value(
                ALLOW_EVERYONE_IF_NO_ACL_FOUND,
                &false,
                Validator::Any,
            )?,
        }),
        Some(other) => {
            return Err(ConfigError::invalid(
                AUTHORIZER_CLASS_NAME,
                other,
                format!("seglog implements {STANDARD_AUTHORIZER} only"),
            ));
        }
    };
    Ok(SecurityConfig {
        listeners: out,
        authorizer,
        connections_max_reauth_ms: number(
            properties,
            CONNECTIONS_MAX_REAUTH_MS,
            &defaults.connections_max_reauth_ms,
            0,
        )?,
        failed_authentication_delay_ms: number(
            properties,
            CONNECTION_FAILED_AUTHENTICATION_DELAY_MS,
            &defaults.failed_authentication_delay_ms,
            0,
        )?,
        sasl_server_max_receive_size: number(
            properties,
            SASL_SERVER_MAX_RECEIVE_SIZE,
            &defaults.sasl_server_max_receive_size,
            1,
        )?,
        authentication_timeout_ms: number(
            properties,
            AUTHENTICATION_TIMEOUT_MS,
            &defaults.authentication_timeout_ms,
            1,
        )?,
        ssl_reload_interval_ms: number(
            properties,
            SSL_RELOAD_INTERVAL_MS,
            &defaults.ssl_reload_interval_ms,
            1,
        )?,
        quota_window_num: number(properties, QUOTA_WINDOW_NUM, &defaults.quota_window_num, 1)?,
        quota_window_size_seconds: number(
            properties,
            QUOTA_WINDOW_SIZE_SECONDS,
            &defaults.quota_window_size_seconds,
            1,
        )?,
        max_connections_per_ip: number(
            properties,
            MAX_CONNECTIONS_PER_IP,
            &defaults.max_connections_per_ip,
            0,
        )?,
        max_connections_per_ip_overrides: properties
            .get(MAX_CONNECTIONS_PER_IP_OVERRIDES)
            .cloned()
            .unwrap_or_default(),
        sasl_mechanism_inter_broker_protocol: properties
            .get(SASL_MECHANISM_INTER_BROKER_PROTOCOL)
            .map_or(defaults.sasl_mechanism_inter_broker_protocol, |m| {
                m.trim().to_ascii_uppercase()
            }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::listeners::parse_listeners;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn parse(pairs: &[(&str, &str)]) -> Result<SecurityConfig, ConfigError> {
        let properties = props(pairs);
        let listeners = parse_listeners(&properties, "127.0.0.1:9092")?;
        security_config(&properties, &listeners)
    }

    #[test]
    fn listener_keys_override_the_plain_keys() {
        let config = parse(&[
            ("listeners", "SSL://:9093,SASL_SSL://:9094"),
            ("ssl.keystore.location", "/etc/seglog/server.pem"),
            ("listener.name.sasl_ssl.ssl.keystore.location", "/etc/seglog/sasl.pem"),
            ("ssl.truststore.location", "/etc/seglog/ca.pem"),
            ("listener.name.ssl.ssl.client.auth", "required"),
            ("listener.name.sasl_ssl.sasl.enabled.mechanisms", "scram-sha-512,PLAIN"),
            (
                "listener.name.sasl_ssl.plain.sasl.jaas.config",
                "x required user_alice=\"alice-secret\";",
            ),
            ("authorizer.class.name", STANDARD_AUTHORIZER),
            ("super.users", "User:admin"),
        ])
        .expect("parses");
        let [ssl, sasl_ssl] = config.listeners.as_slice() else { panic!("two listeners") };
        let plain_tls = ssl.tls.as_ref().expect("tls");
        assert_eq!(plain_tls.keystore, PemSource::File("/etc/seglog/server.pem".into()));
        assert_eq!(plain_tls.client_auth, ClientAuth::Required);
        let tls = sasl_ssl.tls.as_ref().expect("tls");
        assert_eq!(tls.keystore, PemSource::File("/etc/seglog/sasl.pem".into()));
        assert_eq!(tls.client_auth, ClientAuth::None);
        let mechanisms = sasl_ssl.sasl.as_ref().expect("sasl");
        assert_eq!(mechanisms.enabled_mechanisms, ["SCRAM-SHA-512", "PLAIN"]);
        assert_eq!(format!("{:?}", mechanisms.plain_jaas_config), "Some([hidden])");
        assert!(!format!("{config:?}").contains("alice-secret"));
        assert_eq!(config.authorizer.expect("on").super_users, "User:admin");
    }

    #[test]
    fn refusals_say_what_to_do() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("listeners", "SSL://:9093")], "needs a keystore"),
            (
                &[
                    ("listeners", "SSL://:9093"),
                    ("ssl.keystore.location", "k"),
                    ("ssl.keystore.type", "JKS"),
                ],
                "PEM",
            ),
            (
                &[
                    ("listeners", "SSL://:9093"),
                    ("ssl.keystore.location", "k"),
                    ("ssl.key.password", "p"),
                ],
                "encrypted",
            ),
            (
                &[
                    ("listeners", "SSL://:9093"),
                    ("ssl.keystore.location", "k"),
                    ("ssl.client.auth", "required"),
                ],
                "needs a truststore",
            ),
            (
                &[("listeners", "SASL_PLAINTEXT://:9093"), ("sasl.enabled.mechanisms", "GSSAPI")],
                "GSSAPI is not served",
            ),
            (&[("authorizer.class.name", "com.example.Mine")], "StandardAuthorizer only"),
        ];
        for (pairs, expected) in cases {
            let error = parse(pairs).expect_err("refused").to_string();
            assert!(error.contains(expected), "{pairs:?}: {error}");
            assert!(!error.contains("\"p\""), "{error}");
        }
    }
}
