//! The broker's security state (what Kafka spreads over `SocketServer`'s channel builders, the
//! `CredentialCache`, the `StandardAuthorizer` and the `QuotaManagers`): each listener's TLS and
//! SASL settings made ready, the ACLs, SCRAM credentials and client quotas with their durable
//! store, the quota managers and the per-IP connection counts.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rustls::pki_types::CertificateDer;
use seglog_storage::manager::LogManager;

use super::Session;
use super::acl::{AclBinding, AclBindingFilter, AclOperation, Authorizer, ResourceType};
use super::oauth::{JwksValidator, TokenValidator, UnsecuredOptions};
use super::plain::PlainUsers;
use super::principal::{SslPrincipalMapper, ssl_principal};
use super::quota::{ClientQuotaManager, ClientQuotas, ConnectionQuotas, QuotaType};
use super::scram::{ScramCredential, ScramMechanism};
use super::store::{SECURITY_FILE, SECURITY_FILE_BYTES_MAX, SecurityState, StoredAcl, StoredScram};
use super::tls::ReloadingTls;
use crate::Broker;
use crate::cluster::security_image::SecurityChange;
use crate::config::BrokerConfig;

/// Why the security settings or the security store could not be loaded at start.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    /// A listener's TLS, PLAIN or OAUTHBEARER settings, or another security key.
    #[error("{what}: {reason}")]
    Config { what: String, reason: String },
    /// The security store could not be read.
    #[error("cannot read the security store")]
    Storage(#[from] seglog_storage::Error),
    /// The security store is malformed.
    #[error("{0}")]
    Store(String),
}

fn config_error(what: impl Into<String>, reason: impl std::fmt::Display) -> SecurityError {
    SecurityError::Config { what: what.into(), reason: reason.to_string() }
}

/// One listener, ready: its TLS acceptor, principal mapping, PLAIN users and token validator.
#[derive(Debug, Default)]
struct ListenerRuntime {
    tls: Option<ReloadingTls>,
    mapper: Option<SslPrincipalMapper>,
    plain_users: Option<PlainUsers>,
    oauth: Option<Arc<TokenValidator>>,
}

/// The most quota entities a manager tracks at once (a client rotating ids cannot grow memory).
const QUOTA_ENTITIES_TRACKED_MAX: usize = 100_000;

/// The broker's security state.
#[derive(Debug)]
pub(crate) struct Security {
    listeners: Vec<ListenerRuntime>,
    authorizer: Option<RwLock<Authorizer>>,
    scram: RwLock<BTreeMap<(String, ScramMechanism), ScramCredential>>,
    quotas: RwLock<ClientQuotas>,
    pub(crate) produce_quota: ClientQuotaManager,
    pub(crate) fetch_quota: ClientQuotaManager,
    pub(crate) request_quota: ClientQuotaManager,
    connections: Arc<ConnectionQuotas>,
    /// Whether any client quota is configured (the fast path skips the quota managers).
    quotas_configured: std::sync::atomic::AtomicBool,
    /// The durable state, locked while a change is written (changes are serialized).
    state: Mutex<SecurityState>,
    manager: Arc<LogManager>,
    /// In a cluster, where changes go (the controller) instead of `state`.
    cluster: std::sync::OnceLock<Arc<crate::cluster::link::ClusterLink>>,
}

#[path = "runtime_cluster.rs"]
mod cluster;
pub(crate) use cluster::WriteError;

fn listener_runtime(config: &BrokerConfig, index: usize) -> Result<ListenerRuntime, SecurityError> {
    let Some(listener) = config.security.listeners.get(index) else {
        return Ok(ListenerRuntime::default());
    };
    let name = &listener.name;
    let mut runtime = ListenerRuntime::default();
    if let Some(tls) = &listener.tls {
        runtime.tls = Some(
            ReloadingTls::new(tls.clone())
                .map_err(|error| config_error(format!("listener {name}: TLS"), error))?,
        );
        runtime.mapper = Some(
            SslPrincipalMapper::from_rules(&tls.principal_mapping_rules).map_err(|error| {
                config_error(format!("listener {name}: ssl.principal.mapping.rules"), error)
            })?,
        );
    }
    if let Some(sasl) = &listener.sasl {
        let plain = sasl.enabled_mechanisms.iter().any(|m| m == "PLAIN");
        if plain {
            let what = format!("listener {name}: PLAIN users");
            runtime.plain_users = match (&sasl.plain_jaas_config, &sasl.plain_credentials_file) {
                (Some(jaas), _) => Some(
                    PlainUsers::parse_jaas(jaas.expose()).map_err(|e| config_error(&what, e))?,
                ),
                (None, Some(path)) => {
                    let text = std::fs::read_to_string(path).map_err(|error| {
                        config_error(&what, format!("cannot read {}: {error}", path.display()))
                    })?;
                    Some(
                        PlainUsers::parse_file(&text)
                            .map_err(|e| config_error(format!("{what}: {}", path.display()), e))?,
                    )
                }
                // Without a PLAIN user list, PLAIN checks the SCRAM credentials.
                (None, None) => None,
            };
        }
        if sasl.enabled_mechanisms.iter().any(|m| m == "OAUTHBEARER") {
            let what = format!("listener {name}: OAUTHBEARER");
            let oauth = &sasl.oauth;
            let validator = match &oauth.jwks_endpoint_url {
                None => TokenValidator::Unsecured(UnsecuredOptions::default()),
                Some(url) => {
                    let path =
                        super::oauth::parse_file_url(url).map_err(|e| config_error(&what, e))?;
                    let text = std::fs::read_to_string(&path).map_err(|error| {
                        config_error(&what, format!("cannot read {}: {error}", path.display()))
                    })?;
                    TokenValidator::Jwks(
                        JwksValidator::from_file(
                            &text,
                            oauth.expected_issuer.clone(),
                            oauth.expected_audience.clone(),
                            oauth.sub_claim_name.clone(),
                            oauth.scope_claim_name.clone(),
                            oauth.clock_skew_seconds,
                        )
                        .map_err(|e| config_error(format!("{what}: {}", path.display()), e))?,
                    )
                }
            };
            runtime.oauth = Some(Arc::new(validator));
        }
    }
    Ok(runtime)
}

/// An ACL as stored, from a binding.
pub(crate) fn stored_acl(binding: &AclBinding) -> StoredAcl {
    StoredAcl {
        resource_type: binding.resource_type.name().to_owned(),
        resource_name: binding.resource_name.clone(),
        pattern_type: binding.pattern_type.name().to_owned(),
        principal: binding.principal.clone(),
        host: binding.host.clone(),
        operation: binding.operation.name().to_owned(),
        permission: binding.permission.name().to_owned(),
    }
}

/// A binding, from an ACL as stored.
pub(crate) fn binding_of(stored: &StoredAcl) -> Result<AclBinding, String> {
    let field =
        |name: &str, value: &str| format!("ACL field {name}: {value:?} is not a known value");
    Ok(AclBinding {
        resource_type: stored
            .resource_type
            .parse()
            .map_err(|_| field("resource_type", &stored.resource_type))?,
        resource_name: stored.resource_name.clone(),
        pattern_type: stored
            .pattern_type
            .parse()
            .map_err(|_| field("pattern_type", &stored.pattern_type))?,
        principal: stored.principal.clone(),
        host: stored.host.clone(),
        operation: stored.operation.parse().map_err(|_| field("operation", &stored.operation))?,
        permission: stored
            .permission
            .parse()
            .map_err(|_| field("permission", &stored.permission))?,
    })
}

/// A SCRAM credential, from its stored form.
pub(crate) fn credential_of(
    stored: &StoredScram,
) -> Result<(ScramMechanism, ScramCredential), String> {
    let mechanism = ScramMechanism::from_name(&stored.mechanism)
        .ok_or_else(|| format!("{:?} is not a SCRAM mechanism", stored.mechanism))?;
    let (salt, stored_key, server_key) = stored.decode().map_err(|e| e.to_string())?;
    Ok((mechanism, ScramCredential { salt, stored_key, server_key, iterations: stored.iterations }))
}

impl Security {
    /// Makes each listener's settings ready and loads the security store.
    pub(crate) fn new(
        config: &BrokerConfig,
        manager: &Arc<LogManager>,
    ) -> Result<Self, SecurityError> {
        let security = &config.security;
        let listeners = (0..config.listeners.len())
            .map(|index| listener_runtime(config, index))
            .collect::<Result<Vec<_>, _>>()?;
        let state = match manager.read_metadata_file(SECURITY_FILE, SECURITY_FILE_BYTES_MAX)? {
            Some(text) => {
                SecurityState::parse(&text).map_err(|e| SecurityError::Store(e.to_string()))?
            }
            None => SecurityState::default(),
        };
        let authorizer = match &security.authorizer {
            None => None,
            Some(settings) => {
                let super_users = super::acl::parse_super_users(&settings.super_users)
                    .map_err(|e| config_error("super.users", e))?;
                let mut authorizer =
                    Authorizer::new(super_users, settings.allow_everyone_if_no_acl_found);
                for stored in &state.acls {
                    let binding = binding_of(stored).map_err(|reason| {
                        SecurityError::Store(format!("{SECURITY_FILE}: {reason}"))
                    })?;
                    authorizer.add(binding);
                }
                Some(RwLock::new(authorizer))
            }
        };
        let mut scram = BTreeMap::new();
        for stored in &state.scram {
            let (mechanism, credential) = credential_of(stored).map_err(|reason| {
                SecurityError::Store(format!("{SECURITY_FILE}: user {}: {reason}", stored.user))
            })?;
            scram.insert((stored.user.clone(), mechanism), credential);
        }
        let mut quotas = ClientQuotas::new();
        for stored in &state.quotas {
            let entity = super::quota::ClientQuotaEntity::from_wire(
                stored.entity.iter().map(|e| (e.entity_type.as_str(), e.name.as_deref())),
            )
            .map_err(|e| SecurityError::Store(format!("{SECURITY_FILE}: quota entity: {e}")))?;
            quotas.alter(&entity, &stored.key, Some(stored.value)).map_err(|e| {
                SecurityError::Store(format!("{SECURITY_FILE}: quota {}: {e}", stored.key))
            })?;
        }
        let samples = security.quota_window_num;
        let window_ms = u64::from(security.quota_window_size_seconds) * 1000;
        let manager_of = |quota_type| {
            let manager =
                ClientQuotaManager::new(quota_type, samples, window_ms, QUOTA_ENTITIES_TRACKED_MAX);
            manager.set_quotas(&quotas);
            manager
        };
        let overrides =
            ConnectionQuotas::parse_overrides(&security.max_connections_per_ip_overrides)
                .map_err(|e| config_error("max.connections.per.ip.overrides", e))?;
        Ok(Self {
            listeners,
            authorizer,
            scram: RwLock::new(scram),
            produce_quota: manager_of(QuotaType::Produce),
            fetch_quota: manager_of(QuotaType::Fetch),
            request_quota: manager_of(QuotaType::Request),
            quotas_configured: std::sync::atomic::AtomicBool::new(!quotas.is_empty()),
            quotas: RwLock::new(quotas),
            connections: Arc::new(ConnectionQuotas::new(
                security.max_connections_per_ip,
                overrides,
            )),
            state: Mutex::new(state),
            manager: Arc::clone(manager),
            cluster: std::sync::OnceLock::new(),
        })
    }

    /// The TLS acceptor of a listener, if it is a TLS listener.
    pub(crate) fn tls(&self, listener: usize) -> Option<&ReloadingTls> {
        self.listeners.get(listener)?.tls.as_ref()
    }

    /// The principal of a client certificate on a TLS listener (`ssl.principal.mapping.rules`).
    pub(crate) fn certificate_principal(
        &self,
        listener: usize,
        certificate: &CertificateDer<'_>,
    ) -> Result<String, String> {
        let mapper = self
            .listeners
            .get(listener)
            .and_then(|l| l.mapper.as_ref())
            .ok_or_else(|| "no principal mapping on this listener".to_owned())?;
        ssl_principal(mapper, Some(certificate.as_ref()))
            .map(|principal| principal.to_string())
            .map_err(|error| format!("client certificate: {error}"))
    }

    /// Reloads each TLS listener whose key or trust files changed; a failed reload keeps the
    /// old ones and is logged.
    pub(crate) fn reload_certificates(&self, config: &BrokerConfig) {
        for (listener, runtime) in config.listeners.iter().zip(&self.listeners) {
            let Some(tls) = &runtime.tls else { continue };
            match tls.reload_if_changed() {
                Ok(true) => {
                    tracing::info!(listener = %listener.name, "reloaded the TLS key and certificates");
                }
                Ok(false) => {}
                Err(error) => tracing::warn!(
                    listener = %listener.name,
                    %error,
                    "the TLS files changed but cannot be loaded; the previous ones stay in use: {error}"
                ),
            }
        }
    }

    /// The per-IP connection counts.
    pub(crate) fn connection_quotas(&self) -> &Arc<ConnectionQuotas> {
        &self.connections
    }

    /// Checks a PLAIN user and password: against the listener's PLAIN users when it has some,
    /// else against the SCRAM credentials (seglog's addition: `seglog users add` serves both).
    pub(crate) fn verify_plain(&self, listener: usize, username: &str, password: &str) -> bool {
        if let Some(users) = self.listeners.get(listener).and_then(|l| l.plain_users.as_ref()) {
            return users.verify(username, password);
        }
        let scram = self.scram.read().unwrap_or_else(PoisonError::into_inner);
        let mut ok = false;
        for mechanism in ScramMechanism::ALL {
            if let Some(stored) = scram.get(&(username.to_owned(), mechanism)) {
                let given = ScramCredential::from_password(
                    mechanism,
                    password,
                    &stored.salt,
                    stored.iterations,
                );
                ok |= given == *stored;
            }
        }
        ok
    }

    /// The SCRAM credential of a user, for the exchange.
    pub(crate) fn scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
    ) -> Option<ScramCredential> {
        self.scram
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(user.to_owned(), mechanism))
            .cloned()
    }

    /// The OAUTHBEARER token validator of a listener.
    pub(crate) fn oauth_validator(&self, listener: usize) -> Result<Arc<TokenValidator>, String> {
        self.listeners
            .get(listener)
            .and_then(|l| l.oauth.clone())
            .ok_or_else(|| "OAUTHBEARER is not enabled on this listener".to_owned())
    }

    /// Whether ACLs are checked (`authorizer.class.name` is set).
    pub(crate) fn authorizer_enabled(&self) -> bool {
        self.authorizer.is_some()
    }

    /// Whether `session` may perform `operation` on a resource (Kafka's `Authorizer.authorize`);
    /// always, without an authorizer. A denial is counted per resource type.
    pub(crate) fn authorize(
        &self,
        session: &Session,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        let Some(authorizer) = &self.authorizer else { return true };
        let allowed = authorizer.read().unwrap_or_else(PoisonError::into_inner).authorize(
            &session.principal,
            &session.host(),
            operation,
            resource_type,
            name,
        );
        if !allowed {
            ::metrics::counter!("seglog_authorization_denials_total", "resource_type" => resource_type.name())
                .increment(1);
            tracing::debug!(
                principal = %session.principal,
                host = %session.host(),
                operation = operation.name(),
                resource_type = resource_type.name(),
                resource = name,
                "authorization denied"
            );
        }
        allowed
    }

    /// Whether `session` may perform `operation` on some resource of a type (Kafka's
    /// `authorizeByResourceType`).
    pub(crate) fn authorize_by_resource_type(
        &self,
        session: &Session,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        let Some(authorizer) = &self.authorizer else { return true };
        authorizer.read().unwrap_or_else(PoisonError::into_inner).authorize_by_resource_type(
            &session.principal,
            &session.host(),
            operation,
            resource_type,
        )
    }

    /// The operations `session` may perform on a resource, as the bit field Metadata and
    /// DescribeGroups return; every supported operation without an authorizer.
    pub(crate) fn authorized_operations(
        &self,
        session: &Session,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        match &self.authorizer {
            None => {
                super::acl::operations_bit_field(super::acl::supported_operations(resource_type))
            }
            Some(authorizer) => authorizer
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .authorized_operations(&session.principal, &session.host(), resource_type, name),
        }
    }

    /// Writes `state` durably, then makes it the state.
    fn persist(
        &self,
        current: &mut SecurityState,
        next: SecurityState,
    ) -> Result<(), seglog_storage::Error> {
        self.manager.write_metadata_file(SECURITY_FILE, next.to_text().as_bytes())?;
        *current = next;
        Ok(())
    }

    /// The ACLs matching a filter (DescribeAcls).
    pub(crate) fn describe_acls(&self, filter: &AclBindingFilter) -> Option<Vec<AclBinding>> {
        let authorizer = self.authorizer.as_ref()?;
        Some(authorizer.read().unwrap_or_else(PoisonError::into_inner).describe(filter))
    }

    /// Adds ACLs durably (CreateAcls): each one valid is stored (in a cluster, through the
    /// controller); the answer per ACL is its validation error, if any. `None` without an
    /// authorizer.
    pub(crate) fn create_acls(
        &self,
        bindings: Vec<AclBinding>,
    ) -> Option<Result<Vec<Result<(), String>>, WriteError>> {
        let authorizer = self.authorizer.as_ref()?;
        if self.in_cluster() {
            let mut results = Vec::with_capacity(bindings.len());
            let mut entries = Vec::new();
            for binding in &bindings {
                match super::acl::validate_new_acl(binding) {
                    Ok(()) => match cluster::random_id() {
                        Ok(id) => {
                            entries.push(cluster::entry_of(binding, id));
                            results.push(Ok(()));
                        }
                        Err(error) => return Some(Err(error)),
                    },
                    Err(error) => results.push(Err(error.to_string())),
                }
            }
            if !entries.is_empty()
                && let Err(error) = self.forward(SecurityChange::CreateAcls(entries))
            {
                return Some(Err(error));
            }
            return Some(Ok(results));
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = state.clone();
        let mut results = Vec::with_capacity(bindings.len());
        let mut valid = Vec::new();
        for binding in bindings {
            match super::acl::validate_new_acl(&binding) {
                Ok(()) => {
                    let stored = stored_acl(&binding);
                    if !next.acls.contains(&stored) {
                        next.acls.push(stored);
                    }
                    valid.push(binding);
                    results.push(Ok(()));
                }
                Err(error) => results.push(Err(error.to_string())),
            }
        }
        if let Err(error) = self.persist(&mut state, next) {
            return Some(Err(error.into()));
        }
        let mut authorizer = authorizer.write().unwrap_or_else(PoisonError::into_inner);
        for binding in valid {
            authorizer.add(binding);
        }
        Some(Ok(results))
    }

    /// Deletes the ACLs matching each filter durably (DeleteAcls): every filter is matched
    /// first, then all matches are deleted, as Kafka does. `None` without an authorizer.
    pub(crate) fn delete_acls(
        &self,
        filters: &[AclBindingFilter],
    ) -> Option<Result<Vec<Vec<AclBinding>>, WriteError>> {
        let authorizer = self.authorizer.as_ref()?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let matched: Vec<Vec<AclBinding>> = {
            let authorizer = authorizer.read().unwrap_or_else(PoisonError::into_inner);
            filters.iter().map(|filter| authorizer.describe(filter)).collect()
        };
        if self.in_cluster() {
            let doomed: Vec<_> =
                matched.iter().flatten().map(|b| cluster::entry_of(b, [0; 16])).collect();
            if !doomed.is_empty()
                && let Err(error) = self.forward(SecurityChange::DeleteAcls(doomed))
            {
                return Some(Err(error));
            }
            return Some(Ok(matched));
        }
        let mut next = state.clone();
        let doomed: std::collections::BTreeSet<StoredAcl> =
            matched.iter().flatten().map(stored_acl).collect();
        next.acls.retain(|acl| !doomed.contains(acl));
        if let Err(error) = self.persist(&mut state, next) {
            return Some(Err(error.into()));
        }
        let mut authorizer = authorizer.write().unwrap_or_else(PoisonError::into_inner);
        for binding in matched.iter().flatten() {
            authorizer.remove(binding);
        }
        Some(Ok(matched))
    }

    /// Each user's SCRAM mechanisms and iterations (DescribeUserScramCredentials); every user
    /// with a credential when `users` is `None`.
    pub(crate) fn describe_scram(&self) -> BTreeMap<String, Vec<(ScramMechanism, u32)>> {
        let scram = self.scram.read().unwrap_or_else(PoisonError::into_inner);
        let mut out: BTreeMap<String, Vec<(ScramMechanism, u32)>> = BTreeMap::new();
        for ((user, mechanism), credential) in scram.iter() {
            out.entry(user.clone()).or_default().push((*mechanism, credential.iterations));
        }
        out
    }

    /// Applies SCRAM deletions and upsertions durably (AlterUserScramCredentials); the caller
    /// has validated them.
    pub(crate) fn alter_scram(
        &self,
        deletions: &[(String, ScramMechanism)],
        upsertions: Vec<(String, ScramMechanism, ScramCredential)>,
    ) -> Result<(), WriteError> {
        if self.in_cluster() {
            if deletions.is_empty() && upsertions.is_empty() {
                return Ok(());
            }
            let change = SecurityChange::AlterScram {
                deletions: deletions.iter().map(|(u, m)| (u.clone(), m.kafka_type())).collect(),
                upsertions: upsertions
                    .iter()
                    .map(|(user, mechanism, credential)| {
                        cluster::credential_entry(user, *mechanism, credential)
                    })
                    .collect(),
            };
            return self.forward(change);
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = state.clone();
        next.scram.retain(|stored| {
            !deletions.iter().any(|(user, mechanism)| {
                stored.user == *user && stored.mechanism == mechanism.name()
            }) && !upsertions.iter().any(|(user, mechanism, _)| {
                stored.user == *user && stored.mechanism == mechanism.name()
            })
        });
        for (user, mechanism, credential) in &upsertions {
            next.scram.push(StoredScram::encode(
                user,
                mechanism.name(),
                &credential.salt,
                &credential.stored_key,
                &credential.server_key,
                credential.iterations,
            ));
        }
        self.persist(&mut state, next)?;
        let mut scram = self.scram.write().unwrap_or_else(PoisonError::into_inner);
        for key in deletions {
            scram.remove(key);
        }
        for (user, mechanism, credential) in upsertions {
            scram.insert((user, mechanism), credential);
        }
        Ok(())
    }

    /// The configured client quotas, for DescribeClientQuotas.
    pub(crate) fn client_quotas(&self) -> std::sync::RwLockReadGuard<'_, ClientQuotas> {
        self.quotas.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the client quotas durably with `next` (AlterClientQuotas has applied its
    /// changes to a copy), and gives the quota managers the new bounds.
    pub(crate) fn set_client_quotas(&self, next: ClientQuotas) -> Result<(), WriteError> {
        if self.in_cluster() {
            let changes = self.quota_changes(&next);
            return if changes.is_empty() {
                Ok(())
            } else {
                self.forward(SecurityChange::AlterQuotas(changes))
            };
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut stored = state.clone();
        stored.quotas = next
            .entries()
            .flat_map(|(entity, values)| {
                let components: Vec<super::store::StoredEntity> = entity
                    .to_wire()
                    .into_iter()
                    .map(|(entity_type, name)| super::store::StoredEntity {
                        entity_type: entity_type.to_owned(),
                        name: name.map(str::to_owned),
                    })
                    .collect();
                values.iter().map(move |(key, value)| super::store::StoredQuota {
                    entity: components.clone(),
                    key: key.clone(),
                    value: *value,
                })
            })
            .collect();
        self.persist(&mut state, stored)?;
        self.install_quotas(next);
        Ok(())
    }

    /// Gives the quota managers the new bounds and keeps `next` as the quotas.
    fn install_quotas(&self, next: ClientQuotas) {
        self.produce_quota.set_quotas(&next);
        self.fetch_quota.set_quotas(&next);
        self.request_quota.set_quotas(&next);
        self.quotas_configured.store(!next.is_empty(), std::sync::atomic::Ordering::SeqCst);
        *self.quotas.write().unwrap_or_else(PoisonError::into_inner) = next;
    }

    /// Whether any client quota is configured.
    pub(crate) fn quotas_configured(&self) -> bool {
        self.quotas_configured.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Counts an authentication per listener and mechanism (`seglog_authentications_total`).
pub(crate) fn record_authentication(
    broker: &Broker,
    listener: usize,
    mechanism: &str,
    success: bool,
) {
    let listener =
        broker.config.listeners.get(listener).map_or_else(String::new, |l| l.name.clone());
    let result = if success { "success" } else { "failure" };
    let mechanism = match mechanism {
        "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512" | "OAUTHBEARER" | "SSL" => mechanism.to_owned(),
        _ => "other".to_owned(),
    };
    ::metrics::counter!(
        "seglog_authentications_total",
        "listener" => listener,
        "mechanism" => mechanism,
        "result" => result
    )
    .increment(1);
}

/// Counts a failed TLS handshake or client certificate.
pub(crate) fn record_tls_failure(broker: &Broker, listener: usize) {
    record_authentication(broker, listener, "SSL", false);
}
