//! Client quotas and per-IP connection limits. Plays the roles of Kafka's `ClientQuotaManager`
//! and `ClientRequestQuotaManager` (byte-rate and request-percentage throttling per user and
//! client-id, with the precedence of `DefaultQuotaCallback`), `QuotaUtils` (throttle time), the
//! metrics `Rate` over `SampledStat` / `WindowedSum` (the windowed rate a quota is checked
//! against), the client-quota admin model (`ClientQuotaEntity`, `ClientQuotaFilterComponent`,
//! the validation of `ClientQuotaControlManager` and the describe of `ClientQuotasImage`) and the
//! per-IP part of `SocketServer`'s `ConnectionQuotas` (`max.connections.per.ip` and
//! `max.connections.per.ip.overrides`).
//!
//! Time is passed in (`now_ms`); nothing here reads a clock. The texts of the admin errors
//! ([`QuotaError`]) are Kafka's error messages word for word, capitals included, because they go
//! on the wire as the `ErrorMessage` of AlterClientQuotas and DescribeClientQuotas responses;
//! [`QuotaError::error_code`] gives Kafka's error code.

#![cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "Kafka's ClientQuotaManager whole: the expiry task, defaults and filter builders serve the tests"
    )
)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Kafka's `quota.window.num` default: samples retained for the quota rate.
pub(crate) const NUM_QUOTA_SAMPLES_DEFAULT: u32 = 11;
/// Kafka's `quota.window.size.seconds` default (1 s), in milliseconds.
pub(crate) const QUOTA_WINDOW_SIZE_MS_DEFAULT: u64 = 1_000;
/// Kafka's `ClientQuotaManager.InactiveSensorExpirationTimeSeconds` (1 hour), in milliseconds: a
/// tracked user / client-id that records nothing for longer is forgotten.
pub(crate) const INACTIVE_SENSOR_EXPIRATION_TIME_MS: u64 = 3_600_000;
/// Kafka's `ClientRequestQuotaManager.NanosToPercentagePerSecond`.
pub(crate) const NANOS_TO_PERCENTAGE_PER_SECOND: f64 = 100.0 / 1_000_000_000.0;
/// Kafka's `max.connections.per.ip` default (`Integer.MAX_VALUE`).
pub(crate) const DEFAULT_MAX_CONNECTIONS_PER_IP: u32 = 2_147_483_647;

/// The quota key of produce byte rate (Kafka's `QuotaConfig.PRODUCER_BYTE_RATE_OVERRIDE_CONFIG`).
pub(crate) const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
/// The quota key of fetch byte rate (Kafka's `QuotaConfig.CONSUMER_BYTE_RATE_OVERRIDE_CONFIG`).
pub(crate) const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
/// The quota key of request time (Kafka's `QuotaConfig.REQUEST_PERCENTAGE_OVERRIDE_CONFIG`).
pub(crate) const REQUEST_PERCENTAGE: &str = "request_percentage";
/// Kafka's `controller_mutation_rate`: accepted and stored like Kafka, not enforced here.
pub(crate) const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";

/// Entity type `user` (Kafka's `ClientQuotaEntity.USER`).
pub(crate) const ENTITY_TYPE_USER: &str = "user";
/// Entity type `client-id` (Kafka's `ClientQuotaEntity.CLIENT_ID`).
pub(crate) const ENTITY_TYPE_CLIENT_ID: &str = "client-id";
/// Entity type `ip` (Kafka's `ClientQuotaEntity.IP`): known, but no IP quotas are kept here.
pub(crate) const ENTITY_TYPE_IP: &str = "ip";

/// DescribeClientQuotas match type: the exact name (Kafka's `MATCH_TYPE_EXACT`).
pub(crate) const MATCH_TYPE_EXACT: i8 = 0;
/// DescribeClientQuotas match type: the default entity (Kafka's `MATCH_TYPE_DEFAULT`).
pub(crate) const MATCH_TYPE_DEFAULT: i8 = 1;
/// DescribeClientQuotas match type: any entity of that type (Kafka's `MATCH_TYPE_SPECIFIED`).
pub(crate) const MATCH_TYPE_SPECIFIED: i8 = 2;

const INVALID_REQUEST: i16 = 42;
const UNSUPPORTED_VERSION: i16 = 35;
const INVALID_CONFIG: i16 = 40;
/// `Long.MAX_VALUE` as a double (2^63), the bound Kafka checks LONG quota values against.
const LONG_MAX_AS_DOUBLE: f64 = 9_223_372_036_854_775_808.0;

/// The errors of this module. The admin ones display Kafka's message text exactly.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum QuotaError {
    /// An entity with no component (`ClientQuotaControlManager.validateEntity`).
    #[error("Invalid empty client quota entity")]
    EmptyEntity,
    /// The same entity type twice in one entity.
    #[error("Invalid client quota entity, duplicate entity entry {entity_type}")]
    DuplicateEntityEntry { entity_type: String },
    /// An entity type other than `user`, `client-id` and `ip`.
    #[error("Unhandled client quota entity type: {entity_type}")]
    UnhandledEntityType { entity_type: String },
    /// An empty (not null) entity name.
    #[error("Empty {entity_type} not supported")]
    EmptyEntityName { entity_type: String },
    /// `ip` combined with `user` or `client-id` (Kafka's text, its missing space included).
    #[error(
        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
    )]
    IpEntityCombination,
    /// An `ip` entity alone: valid in Kafka (`connection_creation_rate`), not kept here.
    #[error("ip quota entities are not supported by this broker")]
    IpEntityUnsupported,
    /// One key twice in one alteration. Kafka first records a "Duplicate quota key" error and
    /// then overwrites it with this one, so this is the text its clients see.
    #[error("Ignoring duplicate entity {entity}")]
    DuplicateEntity { entity: String },
    /// A key that is not a user / client-id quota.
    #[error("Invalid configuration key {key}")]
    InvalidConfigKey { key: String },
    /// A value that is not greater than 0 (NaN included).
    #[error("Quota {key} must be greater than 0")]
    NonPositiveQuota { key: String },
    /// A LONG quota above `Long.MAX_VALUE`.
    #[error("Proposed value for {key} is too large for a LONG.")]
    TooLargeForLong { key: String },
    /// A LONG quota with a fractional part above 1e-6.
    #[error("{key} cannot be a fractional value.")]
    FractionalQuota { key: String },
    /// A describe filter component with an empty entity type (`ClientQuotasImage.describe`).
    #[error("Invalid empty entity type.")]
    EmptyFilterEntityType,
    /// A describe filter naming an entity type twice.
    #[error("Entity type {entity_type} cannot appear more than once in the filter.")]
    DuplicateFilterEntityType { entity_type: String },
    /// A describe filter on an unknown entity type (UNSUPPORTED_VERSION in Kafka).
    #[error("Unsupported entity type {entity_type}")]
    UnsupportedFilterEntityType { entity_type: String },
    /// MATCH_TYPE_EXACT without a name.
    #[error("Request specified MATCH_TYPE_EXACT, but set match string to null.")]
    ExactMatchWithoutName,
    /// MATCH_TYPE_DEFAULT with a name.
    #[error("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")]
    DefaultMatchWithName,
    /// MATCH_TYPE_SPECIFIED with a name.
    #[error("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")]
    SpecifiedMatchWithName,
    /// A match type other than 0, 1 and 2.
    #[error("Unknown match type {match_type}")]
    UnknownMatchType { match_type: i8 },
    /// An `ip` filter component together with `user` or `client-id`.
    #[error(
        "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
    )]
    IpFilterCombination,
    /// An entry of `max.connections.per.ip.overrides` that is not `host:count`.
    #[error("invalid max.connections.per.ip.overrides entry {entry:?}: {reason}")]
    InvalidConnectionsOverride { entry: String, reason: &'static str },
    /// A host name in `max.connections.per.ip.overrides`: Kafka resolves it, we do not.
    #[error(
        "max.connections.per.ip.overrides names host {host:?}: host names are not resolved, give an IP address literal"
    )]
    HostnameOverride { host: String },
    /// `max.connections.per.ip` is 0 without overrides (Kafka's `KafkaConfig` check).
    #[error(
        "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set"
    )]
    ZeroMaxConnectionsWithoutOverrides,
}

impl QuotaError {
    /// Kafka's error code for this error: INVALID_REQUEST for the admin errors,
    /// UNSUPPORTED_VERSION for an unknown filter entity type, INVALID_CONFIG for configuration.
    pub(crate) fn error_code(&self) -> i16 {
        match self {
            Self::UnsupportedFilterEntityType { .. } => UNSUPPORTED_VERSION,
            Self::InvalidConnectionsOverride { .. }
            | Self::HostnameOverride { .. }
            | Self::ZeroMaxConnectionsWithoutOverrides => INVALID_CONFIG,
            _ => INVALID_REQUEST,
        }
    }
}

/// Kafka's `QuotaType` (the client ones): which quota a [`ClientQuotaManager`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum QuotaType {
    /// Produce byte rate, key `producer_byte_rate`.
    Produce,
    /// Fetch byte rate, key `consumer_byte_rate`.
    Fetch,
    /// Request handler time as a percentage of one thread, key `request_percentage`.
    Request,
}

impl QuotaType {
    /// The three client quota types.
    pub(crate) const ALL: [Self; 3] = [Self::Produce, Self::Fetch, Self::Request];

    /// The quota configuration key of this type.
    pub(crate) fn config_key(self) -> &'static str {
        match self {
            Self::Produce => PRODUCER_BYTE_RATE,
            Self::Fetch => CONSUMER_BYTE_RATE,
            Self::Request => REQUEST_PERCENTAGE,
        }
    }

    /// The type whose configuration key is `key`.
    pub(crate) fn from_config_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.config_key() == key)
    }
}

impl fmt::Display for QuotaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Produce => "Produce",
            Self::Fetch => "Fetch",
            Self::Request => "Request",
        })
    }
}

/// The name of one entity component: Kafka's `<default>` (a null name on the wire) or a name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum EntityName {
    /// The default entity (`/config/users/<default>`), null on the wire.
    Default,
    /// A named user or client-id. `Named("<default>")` is a client literally called so.
    Named(String),
}

impl EntityName {
    /// From the wire form: null is the default.
    pub(crate) fn from_wire(name: Option<&str>) -> Self {
        name.map_or(Self::Default, |n| Self::Named(n.to_owned()))
    }

    /// The wire form: `None` for the default.
    pub(crate) fn as_wire(&self) -> Option<&str> {
        match self {
            Self::Default => None,
            Self::Named(n) => Some(n),
        }
    }
}

/// Kafka's `ClientQuotaEntity` (user / client-id part): which clients a quota applies to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ClientQuotaEntity {
    /// The `user` component, if any.
    pub(crate) user: Option<EntityName>,
    /// The `client-id` component, if any.
    pub(crate) client_id: Option<EntityName>,
}

impl ClientQuotaEntity {
    /// An entity of the given components.
    pub(crate) fn new(user: Option<EntityName>, client_id: Option<EntityName>) -> Self {
        Self { user, client_id }
    }

    /// From the wire's (entity type, entity name) list, validated as Kafka's
    /// `ClientQuotaControlManager.validateEntity` and `configKeysForEntityType` do.
    pub(crate) fn from_wire<'a, I>(entries: I) -> Result<Self, QuotaError>
    where
        I: IntoIterator<Item = (&'a str, Option<&'a str>)>,
    {
        let mut user = None;
        let mut client_id = None;
        let mut ip = None;
        let mut any = false;
        for (entity_type, name) in entries {
            any = true;
            let slot = match entity_type {
                ENTITY_TYPE_USER => &mut user,
                ENTITY_TYPE_CLIENT_ID => &mut client_id,
                ENTITY_TYPE_IP => &mut ip,
                other => {
                    return Err(QuotaError::UnhandledEntityType { entity_type: other.to_owned() });
                }
            };
            if slot.is_some() {
                return Err(QuotaError::DuplicateEntityEntry {
                    entity_type: entity_type.to_owned(),
                });
            }
            if name.is_some_and(str::is_empty) {
                return Err(QuotaError::EmptyEntityName { entity_type: entity_type.to_owned() });
            }
            *slot = Some(EntityName::from_wire(name));
        }
        if !any {
            return Err(QuotaError::EmptyEntity);
        }
        if ip.is_some() {
            return Err(if user.is_some() || client_id.is_some() {
                QuotaError::IpEntityCombination
            } else {
                QuotaError::IpEntityUnsupported
            });
        }
        Ok(Self { user, client_id })
    }

    /// The wire's (entity type, entity name) list.
    pub(crate) fn to_wire(&self) -> Vec<(&'static str, Option<&str>)> {
        let mut out = Vec::with_capacity(2);
        if let Some(user) = &self.user {
            out.push((ENTITY_TYPE_USER, user.as_wire()));
        }
        if let Some(client_id) = &self.client_id {
            out.push((ENTITY_TYPE_CLIENT_ID, client_id.as_wire()));
        }
        out
    }

    /// Checks what `from_wire` checks, for an entity built by hand.
    pub(crate) fn validate(&self) -> Result<(), QuotaError> {
        if self.user.is_none() && self.client_id.is_none() {
            return Err(QuotaError::EmptyEntity);
        }
        for (entity_type, name) in self.to_wire() {
            if name.is_some_and(str::is_empty) {
                return Err(QuotaError::EmptyEntityName { entity_type: entity_type.to_owned() });
            }
        }
        Ok(())
    }

    fn component(&self, entity_type: &str) -> Option<&EntityName> {
        match entity_type {
            ENTITY_TYPE_USER => self.user.as_ref(),
            ENTITY_TYPE_CLIENT_ID => self.client_id.as_ref(),
            _ => None,
        }
    }

    fn component_count(&self) -> usize {
        usize::from(self.user.is_some()) + usize::from(self.client_id.is_some())
    }
}

impl fmt::Display for ClientQuotaEntity {
    /// Kafka's `ClientQuotaEntity.toString`: `ClientQuotaEntity(entries={user=alice, client-id=null})`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientQuotaEntity(entries={")?;
        for (i, (entity_type, name)) in self.to_wire().into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{entity_type}={}", name.unwrap_or("null"))?;
        }
        f.write_str("})")
    }
}

/// Kafka's `ClientQuotaFilterComponent` in its wire form (DescribeClientQuotas `ComponentData`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FilterComponent {
    /// `user`, `client-id` or `ip`.
    pub(crate) entity_type: String,
    /// [`MATCH_TYPE_EXACT`], [`MATCH_TYPE_DEFAULT`] or [`MATCH_TYPE_SPECIFIED`].
    pub(crate) match_type: i8,
    /// The name to match, for MATCH_TYPE_EXACT only.
    pub(crate) match_name: Option<String>,
}

impl FilterComponent {
    /// Kafka's `ofEntity`: the entity of that exact name.
    pub(crate) fn of_entity(entity_type: &str, name: &str) -> Self {
        Self {
            entity_type: entity_type.to_owned(),
            match_type: MATCH_TYPE_EXACT,
            match_name: Some(name.to_owned()),
        }
    }

    /// Kafka's `ofDefaultEntity`: the default entity of that type.
    pub(crate) fn of_default_entity(entity_type: &str) -> Self {
        Self {
            entity_type: entity_type.to_owned(),
            match_type: MATCH_TYPE_DEFAULT,
            match_name: None,
        }
    }

    /// Kafka's `ofEntityType`: any entity of that type.
    pub(crate) fn of_entity_type(entity_type: &str) -> Self {
        Self {
            entity_type: entity_type.to_owned(),
            match_type: MATCH_TYPE_SPECIFIED,
            match_name: None,
        }
    }
}

/// Kafka's quota metric tags (`DefaultQuotaCallback.quotaMetricTags`): which entity a
/// connection's rate is shared with. An empty string is an absent tag, as in Kafka.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct QuotaMetricKey {
    /// The `user` tag (empty when the rate is shared by all users of a client-id).
    pub(crate) user: String,
    /// The `client-id` tag (empty when the rate is shared by all client-ids of a user).
    pub(crate) client_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuotaValueType {
    Long,
    Double,
}

fn quota_value_type(key: &str) -> Option<QuotaValueType> {
    match key {
        PRODUCER_BYTE_RATE | CONSUMER_BYTE_RATE => Some(QuotaValueType::Long),
        REQUEST_PERCENTAGE | CONTROLLER_MUTATION_RATE => Some(QuotaValueType::Double),
        _ => None,
    }
}

/// Kafka's `ClientQuotaControlManager.validateQuotaKeyValue` for user / client-id keys.
fn validate_quota_value(key: &str, value: f64) -> Result<(), QuotaError> {
    let Some(value_type) = quota_value_type(key) else {
        return Err(QuotaError::InvalidConfigKey { key: key.to_owned() });
    };
    // Kafka tests `value <= 0.0`, which lets NaN through; we refuse NaN too.
    if value.is_nan() || value <= 0.0 {
        return Err(QuotaError::NonPositiveQuota { key: key.to_owned() });
    }
    if value_type == QuotaValueType::Long {
        if value > LONG_MAX_AS_DOUBLE {
            return Err(QuotaError::TooLargeForLong { key: key.to_owned() });
        }
        if (value % 1.0).abs() > 1e-6 {
            return Err(QuotaError::FractionalQuota { key: key.to_owned() });
        }
    }
    Ok(())
}

/// One entity of a describe answer with its quotas (a DescribeClientQuotas `EntryData`).
pub(crate) type DescribedQuota = (ClientQuotaEntity, BTreeMap<String, f64>);

/// Kafka's `ClientQuotaControlManager.clientQuotaData` and the broker's `ClientQuotasImage`:
/// the configured client quotas, entity -> quota key -> value.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ClientQuotas {
    entities: BTreeMap<ClientQuotaEntity, BTreeMap<String, f64>>,
}

impl ClientQuotas {
    /// No quotas.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Validates one entity's alterations as Kafka's `alterClientQuotaEntity` does, without
    /// applying them (for `validate_only`): the entity, duplicate keys, then each set value
    /// (removals are not validated, as in Kafka).
    pub(crate) fn validate_alterations(
        entity: &ClientQuotaEntity,
        ops: &[(&str, Option<f64>)],
    ) -> Result<(), QuotaError> {
        entity.validate()?;
        let mut seen = BTreeSet::new();
        for (key, _) in ops {
            if !seen.insert(*key) {
                return Err(QuotaError::DuplicateEntity { entity: entity.to_string() });
            }
        }
        for (key, value) in ops {
            if let Some(value) = value {
                validate_quota_value(key, *value)?;
            }
        }
        Ok(())
    }

    /// Sets (`Some`) or removes (`None`) one quota of an entity.
    pub(crate) fn alter(
        &mut self,
        entity: &ClientQuotaEntity,
        key: &str,
        value: Option<f64>,
    ) -> Result<(), QuotaError> {
        self.alter_all(entity, &[(key, value)])
    }

    /// Applies all alterations of one entity, or none if any is invalid.
    pub(crate) fn alter_all(
        &mut self,
        entity: &ClientQuotaEntity,
        ops: &[(&str, Option<f64>)],
    ) -> Result<(), QuotaError> {
        Self::validate_alterations(entity, ops)?;
        for (key, value) in ops {
            self.put(entity, key, *value);
        }
        Ok(())
    }

    /// Stores without validation (Kafka's `replay` of a `ClientQuotaRecord`); drops an entity
    /// whose last quota is removed.
    fn put(&mut self, entity: &ClientQuotaEntity, key: &str, value: Option<f64>) {
        match value {
            Some(value) => {
                self.entities.entry(entity.clone()).or_default().insert(key.to_owned(), value);
            }
            None => {
                if let Some(quotas) = self.entities.get_mut(entity) {
                    quotas.remove(key);
                    if quotas.is_empty() {
                        self.entities.remove(entity);
                    }
                }
            }
        }
    }

    /// One configured quota.
    pub(crate) fn get(&self, entity: &ClientQuotaEntity, key: &str) -> Option<f64> {
        self.entities.get(entity).and_then(|quotas| quotas.get(key)).copied()
    }

    /// Every entity with its quotas, for persistence.
    pub(crate) fn entries(
        &self,
    ) -> impl Iterator<Item = (&ClientQuotaEntity, &BTreeMap<String, f64>)> {
        self.entities.iter()
    }

    /// How many entities have quotas.
    pub(crate) fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether no quota is configured.
    pub(crate) fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// Kafka's `ClientQuotasImage.describe`: the entities matching every component; `strict`
    /// also requires the entity to have no other component. MATCH_TYPE_SPECIFIED matches any
    /// entity having that type, the default entity included, as KRaft Kafka does.
    pub(crate) fn describe(
        &self,
        components: &[FilterComponent],
        strict: bool,
    ) -> Result<Vec<DescribedQuota>, QuotaError> {
        let mut exact: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        let mut typed: BTreeSet<&str> = BTreeSet::new();
        for component in components {
            let entity_type = component.entity_type.as_str();
            if entity_type.is_empty() {
                return Err(QuotaError::EmptyFilterEntityType);
            }
            if exact.contains_key(entity_type) || typed.contains(entity_type) {
                return Err(QuotaError::DuplicateFilterEntityType {
                    entity_type: entity_type.to_owned(),
                });
            }
            if !matches!(entity_type, ENTITY_TYPE_IP | ENTITY_TYPE_USER | ENTITY_TYPE_CLIENT_ID) {
                return Err(QuotaError::UnsupportedFilterEntityType {
                    entity_type: entity_type.to_owned(),
                });
            }
            let name = component.match_name.as_deref();
            match component.match_type {
                MATCH_TYPE_EXACT => {
                    let Some(name) = name else {
                        return Err(QuotaError::ExactMatchWithoutName);
                    };
                    exact.insert(entity_type, Some(name));
                }
                MATCH_TYPE_DEFAULT => {
                    if name.is_some() {
                        return Err(QuotaError::DefaultMatchWithName);
                    }
                    exact.insert(entity_type, None);
                }
                MATCH_TYPE_SPECIFIED => {
                    if name.is_some() {
                        return Err(QuotaError::SpecifiedMatchWithName);
                    }
                    typed.insert(entity_type);
                }
                match_type => return Err(QuotaError::UnknownMatchType { match_type }),
            }
        }
        let has = |t: &str| exact.contains_key(t) || typed.contains(t);
        if has(ENTITY_TYPE_IP) && (has(ENTITY_TYPE_USER) || has(ENTITY_TYPE_CLIENT_ID)) {
            return Err(QuotaError::IpFilterCombination);
        }
        let matches = |entity: &ClientQuotaEntity| {
            if strict && entity.component_count() != exact.len() + typed.len() {
                return false;
            }
            exact.iter().all(|(t, want)| entity.component(t).is_some_and(|n| n.as_wire() == *want))
                && typed.iter().all(|t| entity.component(t).is_some())
        };
        Ok(self
            .entities
            .iter()
            .filter(|(entity, _)| matches(entity))
            .map(|(entity, quotas)| (entity.clone(), quotas.clone()))
            .collect())
    }

    fn has(&self, user: Option<&EntityName>, client_id: Option<&EntityName>, key: &str) -> bool {
        self.lookup(user, client_id, key).is_some()
    }

    fn lookup(
        &self,
        user: Option<&EntityName>,
        client_id: Option<&EntityName>,
        key: &str,
    ) -> Option<f64> {
        let entity = ClientQuotaEntity { user: user.cloned(), client_id: client_id.cloned() };
        self.get(&entity, key)
    }

    /// The quota of a connection of `user` (principal name) and `client_id`, with the entity
    /// whose rate it shares: Kafka's `DefaultQuotaCallback.quotaMetricTags` (the multi-level
    /// walk of `ClientQuotaManager`'s precedence list) followed by its `quotaLimit` of those
    /// tags. `None` when no quota applies (Kafka's unbounded `Long.MaxValue`).
    pub(crate) fn quota_for(
        &self,
        quota_type: QuotaType,
        user: &str,
        client_id: &str,
    ) -> Option<(QuotaMetricKey, f64)> {
        let key = quota_type.config_key();
        let u = EntityName::Named(user.to_owned());
        let c = EntityName::Named(client_id.to_owned());
        let d = EntityName::Default;
        let both = || QuotaMetricKey { user: user.to_owned(), client_id: client_id.to_owned() };
        let user_only = || QuotaMetricKey { user: user.to_owned(), client_id: String::new() };
        let tags = if self.has(Some(&u), Some(&c), key) || self.has(Some(&u), Some(&d), key) {
            // 1) /config/users/<user>/clients/<client-id>, 2) .../clients/<default>
            both()
        } else if self.has(Some(&u), None, key) {
            // 3) /config/users/<user>
            user_only()
        } else if self.has(Some(&d), Some(&c), key) || self.has(Some(&d), Some(&d), key) {
            // 4) /config/users/<default>/clients/<client-id>, 5) .../clients/<default>
            both()
        } else if self.has(Some(&d), None, key) {
            // 6) /config/users/<default>
            user_only()
        } else {
            // 7) /config/clients/<client-id>, 8) /config/clients/<default>
            QuotaMetricKey { user: String::new(), client_id: client_id.to_owned() }
        };
        let bound = self.quota_limit(key, &tags)?;
        Some((tags, bound))
    }

    /// Kafka's `DefaultQuotaCallback.quotaLimit`: the bound of the entity named by the tags.
    fn quota_limit(&self, key: &str, tags: &QuotaMetricKey) -> Option<f64> {
        let u = EntityName::Named(tags.user.clone());
        let c = EntityName::Named(tags.client_id.clone());
        let d = EntityName::Default;
        match (tags.user.is_empty(), tags.client_id.is_empty()) {
            (false, false) => self
                .lookup(Some(&u), Some(&c), key)
                .or_else(|| self.lookup(Some(&u), Some(&d), key))
                .or_else(|| self.lookup(Some(&d), Some(&c), key))
                .or_else(|| self.lookup(Some(&d), Some(&d), key)),
            (false, true) => {
                self.lookup(Some(&u), None, key).or_else(|| self.lookup(Some(&d), None, key))
            }
            (true, false) => {
                self.lookup(None, Some(&c), key).or_else(|| self.lookup(None, Some(&d), key))
            }
            (true, true) => None,
        }
    }
}

/// Kafka's `QuotaUtils.throttleTime`: the delay X that brings observed rate O back to bound T
/// over window W, `O * W / (W + X) = T`, i.e. `X = (O - T) / T * W`, rounded as `Math.round`.
/// Negative when the rate is within the bound.
pub(crate) fn throttle_time(observed: f64, bound: f64, window_size_ms: i64) -> i64 {
    ((observed - bound) / bound * ms_to_f64(window_size_ms)).round() as i64
}

/// Kafka's `QuotaUtils.boundedThrottleTime`: [`throttle_time`] capped at `max_throttle_time_ms`.
pub(crate) fn bounded_throttle_time(
    observed: f64,
    bound: f64,
    window_size_ms: i64,
    max_throttle_time_ms: i64,
) -> i64 {
    throttle_time(observed, bound, window_size_ms).min(max_throttle_time_ms)
}

/// Kafka's `ClientRequestQuotaManager.nanosToPercentage`: request-thread time as a percentage
/// of one thread-second.
pub(crate) fn nanos_to_percentage(nanos: u64) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "nanosecond counts stay far below 2^53")]
    let nanos = nanos as f64;
    nanos * NANOS_TO_PERCENTAGE_PER_SECOND
}

#[expect(clippy::cast_precision_loss, reason = "millisecond spans stay far below 2^53")]
fn ms_to_f64(ms: i64) -> f64 {
    ms as f64
}

fn ms_to_i64(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// One sample of Kafka's `SampledStat.Sample` (its event window is unbounded, as for quotas).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    event_count: u64,
    start_ms: i64,
    last_event_ms: i64,
    value: f64,
}

impl Sample {
    fn new(now_ms: i64) -> Self {
        Self { event_count: 0, start_ms: now_ms, last_event_ms: now_ms, value: 0.0 }
    }
}

/// Kafka's `Rate` over a `WindowedSum` (`SampledStat`): the sum of the values recorded in the
/// last `samples` windows of `window_ms`, per second of Kafka's windowed elapsed time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SampledRate {
    samples: u32,
    window_ms: i64,
    stat: Vec<Sample>,
    current: usize,
}

impl SampledRate {
    /// A rate over `samples` windows (at least 1, as `MetricConfig` requires) of `window_ms`
    /// (at least 1 ms).
    pub(crate) fn new(samples: u32, window_ms: u64) -> Self {
        let samples = samples.max(1);
        Self {
            samples,
            window_ms: ms_to_i64(window_ms).max(1),
            stat: Vec::with_capacity(samples as usize + 1),
            current: 0,
        }
    }

    /// Kafka's `SampledStat.record`: adds `value` to the current sample, starting the next one
    /// when the current is complete (one extra slot holds the sample overlapping the window).
    pub(crate) fn record(&mut self, value: f64, now_ms: u64) {
        let now = ms_to_i64(now_ms);
        if self.stat.is_empty() {
            self.stat.push(Sample::new(now));
            self.current = 0;
        }
        let complete = self
            .stat
            .get(self.current)
            .is_none_or(|s| now.saturating_sub(s.start_ms) >= self.window_ms);
        if complete {
            let max_samples = self.samples as usize + 1;
            self.current = (self.current + 1) % max_samples;
            if self.current >= self.stat.len() {
                self.current = self.stat.len();
                self.stat.push(Sample::new(now));
            } else if let Some(sample) = self.stat.get_mut(self.current) {
                *sample = Sample::new(now);
            }
        }
        if let Some(sample) = self.stat.get_mut(self.current) {
            sample.value += value;
            sample.event_count += 1;
            sample.last_event_ms = now;
        }
    }

    /// Kafka's `Rate.measure`: the windowed sum divided by the window size in seconds.
    pub(crate) fn measure(&mut self, now_ms: u64) -> f64 {
        let now = ms_to_i64(now_ms);
        self.purge_obsolete_samples(now);
        let total: f64 = self.stat.iter().map(|s| s.value).sum();
        total / (ms_to_f64(self.window_size(now_ms)) / 1000.0)
    }

    /// Kafka's `Rate.windowSize`: the time since the oldest retained sample started, counted
    /// as at least `samples - 1` full windows, and at least 1 ms.
    pub(crate) fn window_size(&mut self, now_ms: u64) -> i64 {
        let now = ms_to_i64(now_ms);
        self.purge_obsolete_samples(now);
        if self.stat.is_empty() {
            self.stat.push(Sample::new(now));
            self.current = 0;
        }
        let oldest = self.stat.iter().map(|s| s.start_ms).min().unwrap_or(now);
        let mut total_elapsed_ms = now.saturating_sub(oldest);
        let num_full_windows = total_elapsed_ms / self.window_ms;
        let min_full_windows = i64::from(self.samples) - 1;
        if num_full_windows < min_full_windows {
            total_elapsed_ms = total_elapsed_ms.saturating_add(
                (min_full_windows - num_full_windows).saturating_mul(self.window_ms),
            );
        }
        total_elapsed_ms.max(1)
    }

    /// Kafka's `SampledStat.purgeObsoleteSamples`: resets samples whose last event is at least
    /// `samples * window_ms` old (samples overlapping the window are kept).
    fn purge_obsolete_samples(&mut self, now: i64) {
        let expire_age = i64::from(self.samples).saturating_mul(self.window_ms);
        for sample in &mut self.stat {
            if now.saturating_sub(sample.last_event_ms) >= expire_age {
                *sample = Sample::new(now);
            }
        }
    }

    #[cfg(test)]
    fn samples_with_events(&self) -> usize {
        self.stat.iter().filter(|s| s.event_count > 0).count()
    }
}

/// Kafka's `ThrottledChannel`: a channel muted for `throttle_time_ms`, to unmute at
/// `unmute_at_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ThrottledChannel {
    /// How long the channel is muted.
    pub(crate) throttle_time_ms: u64,
    /// When the connection layer may unmute it.
    pub(crate) unmute_at_ms: u64,
}

impl ThrottledChannel {
    /// Kafka's `getDelay`: how long until the channel may be unmuted (0 once due).
    pub(crate) fn delay_ms(&self, now_ms: u64) -> u64 {
        self.unmute_at_ms.saturating_sub(now_ms)
    }
}

/// Kafka's quota `Sensor` of one quota metric key.
#[derive(Debug)]
struct ClientSensor {
    rate: SampledRate,
    last_record_ms: u64,
    lru_seq: u64,
    throttled_until_ms: u64,
}

#[derive(Debug, Default)]
struct ManagerState {
    quotas: ClientQuotas,
    sensors: HashMap<QuotaMetricKey, ClientSensor>,
    /// Least recently used first.
    lru: BTreeMap<u64, QuotaMetricKey>,
    next_seq: u64,
}

impl ManagerState {
    /// Kafka's `ExpireSensorTask`: forgets sensors idle for longer than the expiry.
    fn expire_inactive(&mut self, now_ms: u64) {
        while let Some((&seq, key)) = self.lru.first_key_value() {
            let expired = self.sensors.get(key).is_none_or(|s| {
                now_ms.saturating_sub(s.last_record_ms) > INACTIVE_SENSOR_EXPIRATION_TIME_MS
            });
            if !expired {
                break;
            }
            let key = key.clone();
            self.lru.remove(&seq);
            self.sensors.remove(&key);
        }
    }

    /// Kafka's `getOrCreateQuotaSensors`, bounded: evicts the least recently used sensors to
    /// stay within `max_entities`.
    fn sensor(
        &mut self,
        key: &QuotaMetricKey,
        now_ms: u64,
        samples: u32,
        window_ms: u64,
        max_entities: usize,
    ) -> &mut ClientSensor {
        self.expire_inactive(now_ms);
        if !self.sensors.contains_key(key) {
            while self.sensors.len() >= max_entities {
                let Some((_, evicted)) = self.lru.pop_first() else { break };
                self.sensors.remove(&evicted);
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let sensor = self.sensors.entry(key.clone()).or_insert_with(|| ClientSensor {
            rate: SampledRate::new(samples, window_ms),
            last_record_ms: now_ms,
            lru_seq: seq,
            throttled_until_ms: 0,
        });
        self.lru.remove(&sensor.lru_seq);
        sensor.lru_seq = seq;
        sensor.last_record_ms = sensor.last_record_ms.max(now_ms);
        self.lru.insert(seq, key.clone());
        sensor
    }
}

/// Kafka's `ClientQuotaManager` (and, for [`QuotaType::Request`], `ClientRequestQuotaManager`):
/// records what each user / client-id uses and says how long to throttle it. Thread-safe.
#[derive(Debug)]
pub(crate) struct ClientQuotaManager {
    quota_type: QuotaType,
    samples: u32,
    window_ms: u64,
    max_entities_tracked: usize,
    state: Mutex<ManagerState>,
}

impl ClientQuotaManager {
    /// A manager for one quota type with `samples` windows (`quota.window.num`) of `window_ms`
    /// (`quota.window.size.seconds`), tracking at most `max_entities_tracked` (at least 1)
    /// rate-sharing entities at once.
    pub(crate) fn new(
        quota_type: QuotaType,
        samples: u32,
        window_ms: u64,
        max_entities_tracked: usize,
    ) -> Self {
        Self {
            quota_type,
            samples: samples.max(1),
            window_ms: window_ms.max(1),
            max_entities_tracked: max_entities_tracked.max(1),
            state: Mutex::new(ManagerState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ManagerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kafka's `updateQuota`: sets or removes this type's quota of one entity (the value is
    /// trusted: [`ClientQuotas::alter`] validated it). Rates already tracked keep their history.
    pub(crate) fn update_quota(&self, entity: &ClientQuotaEntity, bound: Option<f64>) {
        self.lock().quotas.put(entity, self.quota_type.config_key(), bound);
    }

    /// Replaces this manager's quotas with this type's quotas in `quotas` (at startup, or after
    /// a batch of alterations).
    pub(crate) fn set_quotas(&self, quotas: &ClientQuotas) {
        let key = self.quota_type.config_key();
        let mut mine = ClientQuotas::new();
        for (entity, values) in quotas.entries() {
            if let Some(value) = values.get(key) {
                mine.put(entity, key, Some(*value));
            }
        }
        self.lock().quotas = mine;
    }

    /// Kafka's `quota(user, clientId)`: the bound that applies, `None` when unbounded.
    pub(crate) fn quota(&self, user: &str, client_id: &str) -> Option<f64> {
        self.lock().quotas.quota_for(self.quota_type, user, client_id).map(|(_, bound)| bound)
    }

    /// Kafka's `getMaxValueInQuotaWindow`: the most that can be recorded at once without
    /// certain throttling, `bound * (samples - 1) * window`; `f64::MAX` when unbounded.
    pub(crate) fn max_value_in_quota_window(&self, user: &str, client_id: &str) -> f64 {
        self.quota(user, client_id).map_or(f64::MAX, |bound| {
            #[expect(clippy::cast_precision_loss, reason = "window sizes stay far below 2^53")]
            let window_s = self.window_ms as f64 / 1000.0;
            bound * f64::from(self.samples - 1) * window_s
        })
    }

    /// Kafka's `recordAndGetThrottleTimeMs`: records `value` (bytes, or for Request a
    /// percentage of one thread-second, see [`nanos_to_percentage`]) at `now_ms` and returns
    /// how long to throttle: 0 when no quota applies or the rate is within it, else
    /// `QuotaUtils.throttleTime`, capped at one window for Request quotas as
    /// `ClientRequestQuotaManager` does.
    pub(crate) fn record_and_get_throttle_time_ms(
        &self,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: u64,
    ) -> u64 {
        self.record(user, client_id, value, now_ms, true)
    }

    /// Kafka's `ClientRequestQuotaManager.maybeRecordAndGetThrottleTimeMs`: records the
    /// request-thread time of a request.
    pub(crate) fn record_request_time_and_get_throttle_time_ms(
        &self,
        user: &str,
        client_id: &str,
        request_thread_time_nanos: u64,
        now_ms: u64,
    ) -> u64 {
        self.record(user, client_id, nanos_to_percentage(request_thread_time_nanos), now_ms, true)
    }

    /// Kafka's `recordNoThrottle`: records without checking the quota (network-thread time).
    pub(crate) fn record_no_throttle(&self, user: &str, client_id: &str, value: f64, now_ms: u64) {
        self.record(user, client_id, value, now_ms, false);
    }

    /// Kafka's `unrecordQuotaSensor`: takes back a value recorded for a throttled fetch.
    pub(crate) fn unrecord(&self, user: &str, client_id: &str, value: f64, now_ms: u64) {
        self.record(user, client_id, -value, now_ms, false);
    }

    fn record(&self, user: &str, client_id: &str, value: f64, now_ms: u64, check: bool) -> u64 {
        let mut state = self.lock();
        let Some((key, bound)) = state.quotas.quota_for(self.quota_type, user, client_id) else {
            return 0;
        };
        let sensor =
            state.sensor(&key, now_ms, self.samples, self.window_ms, self.max_entities_tracked);
        sensor.rate.record(value, now_ms);
        if !check {
            return 0;
        }
        let observed = sensor.rate.measure(now_ms);
        if observed <= bound {
            return 0;
        }
        let window_size_ms = sensor.rate.window_size(now_ms);
        let throttle_ms = if self.quota_type == QuotaType::Request {
            bounded_throttle_time(observed, bound, window_size_ms, ms_to_i64(self.window_ms))
        } else {
            throttle_time(observed, bound, window_size_ms)
        };
        u64::try_from(throttle_ms).unwrap_or(0)
    }

    /// Kafka's `throttle`: the channel of this user / client-id is muted for
    /// `throttle_time_ms` from `now_ms`; `None` when there is nothing to throttle. The
    /// muted-until time is also kept for [`Self::unmute_at_ms`].
    pub(crate) fn throttle(
        &self,
        user: &str,
        client_id: &str,
        throttle_time_ms: u64,
        now_ms: u64,
    ) -> Option<ThrottledChannel> {
        if throttle_time_ms == 0 {
            return None;
        }
        let unmute_at_ms = now_ms.saturating_add(throttle_time_ms);
        let mut state = self.lock();
        if let Some((key, _)) = state.quotas.quota_for(self.quota_type, user, client_id) {
            let sensor =
                state.sensor(&key, now_ms, self.samples, self.window_ms, self.max_entities_tracked);
            sensor.throttled_until_ms = sensor.throttled_until_ms.max(unmute_at_ms);
        }
        Some(ThrottledChannel { throttle_time_ms, unmute_at_ms })
    }

    /// When the throttled channels of this user / client-id may be unmuted, if still muted
    /// at `now_ms`.
    pub(crate) fn unmute_at_ms(&self, user: &str, client_id: &str, now_ms: u64) -> Option<u64> {
        let state = self.lock();
        let (key, _) = state.quotas.quota_for(self.quota_type, user, client_id)?;
        let until = state.sensors.get(&key)?.throttled_until_ms;
        (until > now_ms).then_some(until)
    }

    /// Kafka's sensor expiry task: forgets entities idle for over an hour.
    pub(crate) fn expire_inactive_sensors(&self, now_ms: u64) {
        self.lock().expire_inactive(now_ms);
    }

    /// How many rate-sharing entities are tracked now.
    pub(crate) fn tracked_entities(&self) -> usize {
        self.lock().sensors.len()
    }
}

mod connections;

pub(crate) use connections::ConnectionQuotas;
#[cfg(test)]
use connections::{ConnectionPermit, TooManyConnections};

#[cfg(test)]
impl ClientQuotaManager {
    fn tracked_keys(&self) -> BTreeSet<QuotaMetricKey> {
        self.lock().sensors.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    // Ported Kafka tests (names as in Kafka):
    // - ClientQuotaManagerTest: testClientIdQuotaParsing, testUserQuotaParsing,
    //   testUserClientIdQuotaParsing, testUserQuotaParsingWithDefaultClientIdQuota,
    //   testUserClientQuotaParsingIdWithDefaultClientIdQuota,
    //   testGetMaxValueInQuotaWindowWithNonDefaultQuotaWindow, testSetAndRemoveDefaultUserQuota,
    //   testSetAndRemoveUserQuota, testSetAndRemoveUserClientQuota, testQuotaConfigPrecedence,
    //   testQuotaViolation, testExpireThrottleTimeSensor / testExpireQuotaSensors (as expiry of
    //   idle entities), testClientIdNotSanitized
    // - ClientRequestQuotaManagerTest: testRequestPercentageQuotaViolation
    // - QuotaUtilsTest: testThrottleTimeObservedRateEqualsQuota, ...BelowQuota, ...AboveQuota,
    //   testBoundedThrottleTimeObservedRateEqualsQuota, ...BelowQuota, ...AboveQuotaBelowLimit,
    //   ...AboveQuotaAboveLimit
    // - RateTest: testRateWithNoPriorAvailableSamples, testRateIsConsistentAfterTheFirstWindow
    // - SampledStatTest: testSampleIsPurgedIfDoesntOverlap, testSampleIsKeptIfOverlaps,
    //   testSampleIsKeptIfOverlapsAndExtra
    // - ConnectionQuotasTest: testMaxConnectionsPerIp, testNoConnectionLimitsByDefault;
    //   SocketServerTest: testZeroMaxConnectionsPerIp, testMaxConnectionsPerIpOverrides
    // - ClientQuotasRequestTest: testDescribeClientQuotasMatchExact,
    //   testDescribeClientQuotasMatchPartial (without its two ip entities),
    //   testDescribeClientQuotasInvalidFilterCombination, testClientQuotasUnsupportedEntityTypes,
    //   testClientQuotasWithDefaultName
    // - ClientQuotaControlManagerTest: testInvalidEntityTypes, testInvalidQuotaKeys,
    //   testAlterAndRemove, testConfigKeysForEmptyEntity, testConfigKeysForEntityTypeWithIpAndUser,
    //   testConfigKeysForEntityTypeWithIpAndClientId, testValidateQuotaKeyValueFor* (all)
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// A fixed start, as MockTime's.
    const T0: u64 = 1_700_000_000_000;
    const N: f64 = 11.0;

    #[expect(clippy::unnecessary_wraps, reason = "entity components are options")]
    fn named(name: &str) -> Option<EntityName> {
        Some(EntityName::Named(name.to_owned()))
    }

    #[expect(clippy::unnecessary_wraps, reason = "entity components are options")]
    fn dflt() -> Option<EntityName> {
        Some(EntityName::Default)
    }

    fn entity(user: Option<EntityName>, client_id: Option<EntityName>) -> ClientQuotaEntity {
        ClientQuotaEntity::new(user, client_id)
    }

    fn key(user: &str, client_id: &str) -> QuotaMetricKey {
        QuotaMetricKey { user: user.to_owned(), client_id: client_id.to_owned() }
    }

    fn manager(quota_type: QuotaType) -> ClientQuotaManager {
        ClientQuotaManager::new(
            quota_type,
            NUM_QUOTA_SAMPLES_DEFAULT,
            QUOTA_WINDOW_SIZE_MS_DEFAULT,
            10_000,
        )
    }

    #[test]
    fn quota_type_config_keys() {
        assert_eq!(QuotaType::Produce.config_key(), "producer_byte_rate");
        assert_eq!(QuotaType::Fetch.config_key(), "consumer_byte_rate");
        assert_eq!(QuotaType::Request.config_key(), "request_percentage");
        assert_eq!(QuotaType::from_config_key("request_percentage"), Some(QuotaType::Request));
        assert_eq!(QuotaType::from_config_key("controller_mutation_rate"), None);
        assert_eq!(QuotaType::Produce.to_string(), "Produce");
    }

    /// ClientQuotaManagerTest.testQuotaParsing, all times at one instant (MockTime not moved).
    fn quota_parsing(
        client1: &(&str, &str, ClientQuotaEntity),
        client2: &(&str, &str, ClientQuotaEntity),
        random: (&str, &str),
        default_entity: &ClientQuotaEntity,
    ) {
        let m = manager(QuotaType::Produce);
        m.update_quota(&client1.2, Some(2000.0));
        m.update_quota(&client2.2, Some(4000.0));
        assert_eq!(m.quota(random.0, random.1), None, "no quota means Long.MaxValue");
        assert_eq!(m.quota(client1.0, client1.1), Some(2000.0));
        assert_eq!(m.quota(client2.0, client2.1), Some(4000.0));

        // Case 1: 27500 over 10 s = 2750/s against 2000: (750 / 2000) * 10000 ms.
        let t = m.record_and_get_throttle_time_ms(client1.0, client1.1, 2500.0 * N, T0);
        assert_eq!(t, 3750);

        // Case 2: quota raised, the existing rate is checked against the new bound.
        m.update_quota(&client1.2, Some(3000.0));
        assert_eq!(m.quota(client1.0, client1.1), Some(3000.0));
        assert_eq!(m.record_and_get_throttle_time_ms(client1.0, client1.1, 0.0, T0), 0);

        // Case 3: back down to 500: (2250 / 500) * 10000 ms.
        m.update_quota(&client1.2, Some(500.0));
        assert_eq!(m.quota(client1.0, client1.1), Some(500.0));
        assert_eq!(m.record_and_get_throttle_time_ms(client1.0, client1.1, 0.0, T0), 45_000);

        // Case 4: override removed, a high default applies to the same rate: 38500 / 10 s.
        m.update_quota(&client1.2, None);
        m.update_quota(default_entity, Some(4000.0));
        assert_eq!(m.quota(client1.0, client1.1), Some(4000.0));
        assert_eq!(m.record_and_get_throttle_time_ms(client1.0, client1.1, 1000.0 * N, T0), 0);
    }

    #[test]
    fn client_id_user_and_user_client_id_quota_parsing() {
        // testClientIdQuotaParsing
        quota_parsing(
            &("ANONYMOUS", "p1", entity(None, named("p1"))),
            &("ANONYMOUS", "p2", entity(None, named("p2"))),
            ("ANONYMOUS", "random-client-id"),
            &entity(None, dflt()),
        );
        // testUserQuotaParsing, testUserQuotaParsingWithDefaultClientIdQuota
        quota_parsing(
            &("User1", "p1", entity(named("User1"), None)),
            &("User2", "p2", entity(named("User2"), None)),
            ("RandomUser", "random-client-id"),
            &entity(dflt(), None),
        );
        // testUserClientIdQuotaParsing, testUserClientQuotaParsingIdWithDefaultClientIdQuota
        quota_parsing(
            &("User1", "p1", entity(named("User1"), named("p1"))),
            &("User2", "p2", entity(named("User2"), named("p2"))),
            ("RandomUser", "random-client-id"),
            &entity(dflt(), dflt()),
        );
    }

    #[test]
    fn get_max_value_in_quota_window_with_non_default_quota_window() {
        let m = ClientQuotaManager::new(QuotaType::Fetch, 4, 1000, 100);
        assert!((m.max_value_in_quota_window("userA", "client1") - f64::MAX).abs() < 0.01);
        m.update_quota(&entity(dflt(), None), Some(10.0));
        assert!((m.max_value_in_quota_window("userA", "client1") - 30.0).abs() < 0.01);
    }

    /// ClientQuotaManagerTest.checkQuota, with the exact throttle time of a model that sums the
    /// values recorded per expected metric key (all at one instant: a 10 s window).
    struct Checker {
        m: ClientQuotaManager,
        sums: BTreeMap<QuotaMetricKey, f64>,
    }

    impl Checker {
        fn new() -> Self {
            Self { m: manager(QuotaType::Produce), sums: BTreeMap::new() }
        }

        fn check(
            &mut self,
            user: &str,
            client: &str,
            bound: Option<f64>,
            value: f64,
            throttle: bool,
            tags: (&str, &str),
        ) {
            assert_eq!(self.m.quota(user, client), bound, "{user}/{client}");
            let max = bound.map_or(f64::MAX, |b| 10.0 * b);
            assert!((self.m.max_value_in_quota_window(user, client) - max).abs() < 0.01);
            let got = self.m.record_and_get_throttle_time_ms(user, client, value * N, T0);
            if let Some(b) = bound {
                let sum = self.sums.entry(key(tags.0, tags.1)).or_insert(0.0);
                *sum += value * N;
                let rate = *sum / 10.0;
                let want = if rate > b { ((rate - b) / b * 10_000.0).round() as u64 } else { 0 };
                assert_eq!(got, want, "{user}/{client}");
                let (found, _) = self
                    .m
                    .lock()
                    .quotas
                    .quota_for(QuotaType::Produce, user, client)
                    .expect("a quota applies");
                assert_eq!(found, key(tags.0, tags.1), "{user}/{client}");
            }
            assert_eq!(got > 0, throttle, "{user}/{client}: throttle {got}");
        }
    }

    #[test]
    fn set_and_remove_default_user_quota() {
        let mut c = Checker::new();
        c.check("userA", "client1", None, 1000.0, false, ("", ""));
        c.m.update_quota(&entity(dflt(), None), Some(10.0));
        c.check("userA", "client1", Some(10.0), 1000.0, true, ("userA", ""));
        c.m.update_quota(&entity(dflt(), None), None);
        c.check("userA", "client1", None, 1000.0, false, ("", ""));
    }

    #[test]
    fn set_and_remove_user_quota() {
        let mut c = Checker::new();
        c.m.update_quota(&entity(named("userA"), None), Some(10.0));
        c.check("userA", "client1", Some(10.0), 1000.0, true, ("userA", ""));
        c.m.update_quota(&entity(named("userA"), None), None);
        c.check("userA", "client1", None, 1000.0, false, ("", ""));
    }

    #[test]
    fn set_and_remove_user_client_quota() {
        let mut c = Checker::new();
        let e = entity(named("userA"), named("client1"));
        c.m.update_quota(&e, Some(10.0));
        c.check("userA", "client1", Some(10.0), 1000.0, true, ("userA", "client1"));
        c.m.update_quota(&e, None);
        c.check("userA", "client1", None, 1000.0, false, ("", ""));
    }

    #[test]
    fn quota_config_precedence() {
        let mut c = Checker::new();
        let q = |c: &Checker, u, cl, v| c.m.update_quota(&entity(u, cl), v);
        q(&c, dflt(), None, Some(1000.0));
        q(&c, None, dflt(), Some(2000.0));
        q(&c, dflt(), dflt(), Some(3000.0));
        q(&c, named("userA"), None, Some(4000.0));
        q(&c, named("userA"), named("client1"), Some(5000.0));
        q(&c, named("userB"), None, Some(6000.0));
        q(&c, named("userB"), named("client1"), Some(7000.0));
        q(&c, named("userB"), dflt(), Some(8000.0));
        q(&c, named("userC"), None, Some(10000.0));
        q(&c, None, named("client1"), Some(9000.0));

        c.check("userA", "client1", Some(5000.0), 4500.0, false, ("userA", "client1"));
        c.check("userA", "client2", Some(4000.0), 4500.0, true, ("userA", ""));
        c.check("userA", "client3", Some(4000.0), 0.0, true, ("userA", ""));
        c.check("userA", "client1", Some(5000.0), 0.0, false, ("userA", "client1"));

        c.check("userB", "client1", Some(7000.0), 8000.0, true, ("userB", "client1"));
        c.check("userB", "client2", Some(8000.0), 7000.0, false, ("userB", "client2"));
        c.check("userB", "client3", Some(8000.0), 7000.0, false, ("userB", "client3"));

        c.check("userD", "client1", Some(3000.0), 3500.0, true, ("userD", "client1"));
        c.check("userD", "client2", Some(3000.0), 2500.0, false, ("userD", "client2"));
        c.check("userE", "client1", Some(3000.0), 2500.0, false, ("userE", "client1"));

        // Remove default <user, client> quota config, revert to <user> default.
        q(&c, dflt(), dflt(), None);
        c.check("userD", "client1", Some(1000.0), 0.0, false, ("userD", ""));
        c.check("userE", "client4", Some(1000.0), 1500.0, true, ("userE", ""));
        c.check("userF", "client4", Some(1000.0), 800.0, false, ("userF", ""));
        c.check("userF", "client5", Some(1000.0), 800.0, true, ("userF", ""));

        // Remove default <user> quota config, revert to <client-id> default.
        q(&c, dflt(), None, None);
        c.check("userF", "client4", Some(2000.0), 0.0, false, ("", "client4"));
        c.check("userF", "client5", Some(2000.0), 0.0, false, ("", "client5"));
        c.check("userF", "client5", Some(2000.0), 2500.0, true, ("", "client5"));
        c.check("userG", "client5", Some(2000.0), 0.0, true, ("", "client5"));

        // Update quotas.
        q(&c, named("userA"), None, Some(8000.0));
        q(&c, named("userA"), named("client1"), Some(10000.0));
        c.check("userA", "client2", Some(8000.0), 0.0, false, ("userA", ""));
        c.check("userA", "client2", Some(8000.0), 4500.0, true, ("userA", ""));
        c.check("userA", "client1", Some(10000.0), 0.0, false, ("userA", "client1"));
        c.check("userA", "client1", Some(10000.0), 6000.0, true, ("userA", "client1"));
        q(&c, named("userA"), named("client1"), None);
        c.check("userA", "client6", Some(8000.0), 0.0, true, ("userA", ""));
        q(&c, named("userA"), named("client6"), Some(11000.0));
        c.check("userA", "client6", Some(11000.0), 8500.0, false, ("userA", "client6"));
        q(&c, named("userA"), dflt(), Some(12000.0));
        q(&c, named("userA"), named("client6"), None);
        c.check("userA", "client6", Some(12000.0), 4000.0, true, ("userA", "client6"));
    }

    #[test]
    fn quota_violation() {
        let m = manager(QuotaType::Produce);
        m.update_quota(&entity(None, dflt()), Some(500.0));
        let mut now = T0;
        for _ in 0..10 {
            assert_eq!(m.record_and_get_throttle_time_ms("ANONYMOUS", "unknown", 400.0, now), 0);
            now += 1000;
        }
        // 400 * 10 + 2300 = 6300 over 10.5 s = 600/s; (600 - 500) / 500 * 10500 ms = 2100.
        now += 500;
        let throttle = m.record_and_get_throttle_time_ms("ANONYMOUS", "unknown", 2300.0, now);
        assert_eq!(throttle, 2100);
        let channel = m.throttle("ANONYMOUS", "unknown", throttle, now).expect("throttled");
        assert_eq!(channel, ThrottledChannel { throttle_time_ms: 2100, unmute_at_ms: now + 2100 });
        assert_eq!(channel.delay_ms(now), 2100);
        assert_eq!(m.unmute_at_ms("ANONYMOUS", "unknown", now), Some(now + 2100));
        assert_eq!(m.unmute_at_ms("ANONYMOUS", "other-client", now), None);
        now += throttle;
        assert_eq!(channel.delay_ms(now), 0);
        assert_eq!(m.unmute_at_ms("ANONYMOUS", "unknown", now), None);

        // Delays continue until the bursty sample rolls over (values from a model of Kafka's
        // SampledStat / Rate run on the same sequence).
        let mut seen = Vec::new();
        for _ in 0..10 {
            seen.push(m.record_and_get_throttle_time_ms("ANONYMOUS", "unknown", 400.0, now));
            now += 1000;
        }
        assert_eq!(seen, [1200, 1200, 1200, 1200, 1200, 1200, 1200, 1200, 1700, 0]);
        assert_eq!(m.record_and_get_throttle_time_ms("ANONYMOUS", "unknown", 0.0, now), 0);
        assert_eq!(m.throttle("ANONYMOUS", "unknown", 0, now), None);
    }

    #[test]
    fn request_percentage_quota_violation() {
        let m = manager(QuotaType::Request);
        m.update_quota(&entity(named("ANONYMOUS"), named("test-client")), Some(1.0));
        let pct = |millis: f64| millis * 1000.0 * 1000.0 * NANOS_TO_PERCENTAGE_PER_SECOND;
        let rec = |v: f64, now: u64| {
            m.record_and_get_throttle_time_ms("ANONYMOUS", "test-client", v, now)
        };
        let mut now = T0;
        for _ in 0..10 {
            assert_eq!(rec(pct(4.0), now), 0);
            now += 1000;
        }
        // 4 * 10 + 67.1 = 107.1 ms over 10.5 s = 10.2 ms/s; (10.2 - 10) / 10 * 10500 = 210 ms.
        now += 500;
        let throttle = rec(pct(67.1), now);
        assert_eq!(throttle, 210);
        now += throttle;
        let mut seen = Vec::new();
        for _ in 0..11 {
            seen.push(rec(pct(4.0), now));
            now += 1000;
        }
        assert_eq!(seen, [400, 400, 400, 400, 400, 400, 400, 400, 400, 400, 900]);
        assert_eq!(rec(0.0, now), 0, "unthrottled once the bursty sample rolled over");

        // A spike needing more than one window is capped at one window (1000 ms).
        assert_eq!(rec(pct(500.0), now), 1000);
        for _ in 0..10 {
            now += 1000;
            assert_eq!(rec(0.0, now), 1000);
        }
        now += 1000;
        assert_eq!(rec(0.0, now), 0);
    }

    #[test]
    fn request_time_in_nanos_is_a_percentage_of_one_thread_second() {
        assert!((nanos_to_percentage(1_000_000_000) - 100.0).abs() < 1e-9);
        assert!((nanos_to_percentage(4_000_000) - 0.4).abs() < 1e-12);
        let m = manager(QuotaType::Request);
        m.update_quota(&entity(dflt(), None), Some(1.0));
        // 200 ms in one instant: 20 % over 10 s = 2 %/s against 1 %: capped at one window.
        let t = m.record_request_time_and_get_throttle_time_ms("u", "c", 200_000_000, T0);
        assert_eq!(t, 1000);
    }

    #[test]
    fn produce_throttle_is_not_capped() {
        // Only ClientRequestQuotaManager bounds the throttle time; byte-rate quotas do not.
        let m = manager(QuotaType::Fetch);
        m.update_quota(&entity(None, dflt()), Some(100.0));
        // 100000 bytes over 10 s = 10000/s: (9900 / 100) * 10000 ms.
        assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 100_000.0, T0), 990_000);
    }

    #[test]
    fn unrecord_takes_back_a_throttled_fetch() {
        let m = manager(QuotaType::Fetch);
        m.update_quota(&entity(None, dflt()), Some(500.0));
        assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 11_000.0, T0), 12_000);
        m.unrecord("u", "c", 11_000.0, T0);
        assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 0.0, T0), 0);
        m.record_no_throttle("u", "c", 11_000.0, T0);
        assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 0.0, T0), 12_000);
    }

    #[test]
    fn expire_idle_entities() {
        // testExpireThrottleTimeSensor / testExpireQuotaSensors: a forgotten entity is
        // recreated on its next record and throttled from its new history.
        let m = manager(QuotaType::Produce);
        m.update_quota(&entity(None, dflt()), Some(500.0));
        assert_eq!(m.record_and_get_throttle_time_ms("ANONYMOUS", "client1", 100.0, T0), 0);
        assert_eq!(m.tracked_entities(), 1);
        m.expire_inactive_sensors(T0 + INACTIVE_SENSOR_EXPIRATION_TIME_MS);
        assert_eq!(m.tracked_entities(), 1, "expiry is after more than one hour");
        let later = T0 + INACTIVE_SENSOR_EXPIRATION_TIME_MS + 1;
        m.expire_inactive_sensors(later);
        assert_eq!(m.tracked_entities(), 0);
        // 10000 over 10 s = 1000/s against 500: (500 / 500) * 10000 ms; the 100 is forgotten.
        assert_eq!(
            m.record_and_get_throttle_time_ms("ANONYMOUS", "client1", 10_000.0, later),
            10_000
        );
        assert_eq!(m.tracked_keys(), BTreeSet::from([key("", "client1")]));
        // Expiry also runs lazily when another entity records.
        let much_later = later + INACTIVE_SENSOR_EXPIRATION_TIME_MS + 1;
        m.record_and_get_throttle_time_ms("ANONYMOUS", "client2", 1.0, much_later);
        assert_eq!(m.tracked_keys(), BTreeSet::from([key("", "client2")]));
    }

    #[test]
    fn client_id_not_sanitized() {
        let m = manager(QuotaType::Produce);
        m.update_quota(&entity(None, dflt()), Some(500.0));
        m.record_and_get_throttle_time_ms("ANONYMOUS", "client@#$%", 100.0, T0);
        assert_eq!(m.tracked_keys(), BTreeSet::from([key("", "client@#$%")]));
    }

    #[test]
    fn tracked_entities_are_bounded() {
        let m = ClientQuotaManager::new(QuotaType::Produce, 11, 1000, 3);
        m.update_quota(&entity(None, dflt()), Some(500.0));
        for i in 0..10 {
            m.record_and_get_throttle_time_ms("u", &format!("c{i}"), 1.0, T0 + i);
            assert!(m.tracked_entities() <= 3);
        }
        assert_eq!(m.tracked_keys(), BTreeSet::from([key("", "c7"), key("", "c8"), key("", "c9")]));
        // Least recently used goes first: touching c7 makes c8 the one evicted.
        m.record_and_get_throttle_time_ms("u", "c7", 1.0, T0 + 20);
        m.record_and_get_throttle_time_ms("u", "c10", 1.0, T0 + 21);
        assert_eq!(
            m.tracked_keys(),
            BTreeSet::from([key("", "c7"), key("", "c9"), key("", "c10")])
        );
        // Zero is taken as one.
        let one = ClientQuotaManager::new(QuotaType::Produce, 11, 1000, 0);
        one.update_quota(&entity(None, dflt()), Some(500.0));
        one.record_and_get_throttle_time_ms("u", "a", 1.0, T0);
        one.record_and_get_throttle_time_ms("u", "b", 1.0, T0);
        assert_eq!(one.tracked_keys(), BTreeSet::from([key("", "b")]));
    }

    #[test]
    fn rotating_client_ids_share_a_user_quota() {
        let m = ClientQuotaManager::new(QuotaType::Produce, 11, 1000, 3);
        m.update_quota(&entity(named("mallory"), None), Some(100.0));
        let mut last = 0;
        for i in 0..1000 {
            last = m.record_and_get_throttle_time_ms("mallory", &format!("id-{i}"), 1.0, T0);
        }
        assert_eq!(m.tracked_keys(), BTreeSet::from([key("mallory", "")]));
        // 1000 over 10 s = 100/s: exactly the bound, not above it.
        assert_eq!(last, 0);
        assert_eq!(m.record_and_get_throttle_time_ms("mallory", "id-x", 10.0, T0), 100);
        // Connections with no quota are not tracked at all.
        m.record_and_get_throttle_time_ms("alice", "c", 1e9, T0);
        assert_eq!(m.tracked_entities(), 1);
    }

    #[test]
    fn set_quotas_takes_only_this_type() {
        let mut store = ClientQuotas::new();
        let e = entity(named("alice"), None);
        store
            .alter_all(&e, &[(PRODUCER_BYTE_RATE, Some(1000.0)), (REQUEST_PERCENTAGE, Some(50.0))])
            .expect("valid");
        let produce = manager(QuotaType::Produce);
        let fetch = manager(QuotaType::Fetch);
        let request = manager(QuotaType::Request);
        for m in [&produce, &fetch, &request] {
            m.set_quotas(&store);
        }
        assert_eq!(produce.quota("alice", "c"), Some(1000.0));
        assert_eq!(fetch.quota("alice", "c"), None);
        assert_eq!(request.quota("alice", "c"), Some(50.0));
        assert_eq!(
            store.quota_for(QuotaType::Request, "alice", "c"),
            Some((key("alice", ""), 50.0))
        );
    }

    #[test]
    fn quota_for_follows_the_precedence_list() {
        // One row per level of ClientQuotaManager's list, each added above the previous ones.
        let levels = [
            (entity(None, dflt()), 8.0, key("", "c")),
            (entity(None, named("c")), 7.0, key("", "c")),
            (entity(dflt(), None), 6.0, key("u", "")),
            (entity(dflt(), dflt()), 5.0, key("u", "c")),
            (entity(dflt(), named("c")), 4.0, key("u", "c")),
            (entity(named("u"), None), 3.0, key("u", "")),
            (entity(named("u"), dflt()), 2.0, key("u", "c")),
            (entity(named("u"), named("c")), 1.0, key("u", "c")),
        ];
        let mut store = ClientQuotas::new();
        assert_eq!(store.quota_for(QuotaType::Produce, "u", "c"), None);
        for (e, bound, want) in levels {
            store.alter(&e, PRODUCER_BYTE_RATE, Some(bound)).expect("valid");
            assert_eq!(store.quota_for(QuotaType::Produce, "u", "c"), Some((want, bound)), "{e}");
            assert_eq!(store.quota_for(QuotaType::Fetch, "u", "c"), None);
        }
    }

    #[test]
    fn quota_utils_throttle_time() {
        // QuotaUtilsTest: a fresh Rate has a window of (samples - 1) s.
        let window = |samples: u32| SampledRate::new(samples, 1000).window_size(T0);
        // testThrottleTimeObservedRateEqualsQuota
        assert_eq!(throttle_time(16.5, 16.5, window(10)), 0);
        assert_eq!(throttle_time(16.5, 16.5, window(11)), 0);
        // testThrottleTimeObservedRateBelowQuota
        assert!(throttle_time(16.5, 20.4, window(10)) < 0);
        assert!(throttle_time(16.5, 20.4, window(11)) < 0);
        // testThrottleTimeObservedRateAboveQuota
        assert_eq!(throttle_time(100.0, 50.0, window(3)), 2000);
        // testBoundedThrottleTimeObservedRateEqualsQuota
        assert_eq!(bounded_throttle_time(18.2, 18.2, window(10), 500), 0);
        assert_eq!(bounded_throttle_time(18.2, 18.2, window(11), 500), 0);
        // testBoundedThrottleTimeObservedRateBelowQuota
        assert!(bounded_throttle_time(16.5, 22.4, window(10), 500) < 0);
        assert!(bounded_throttle_time(16.5, 22.4, window(11), 500) < 0);
        // testBoundedThrottleTimeObservedRateAboveQuotaBelowLimit
        assert_eq!(bounded_throttle_time(55.0, 50.0, window(2), 500), 100);
        // testBoundedThrottleTimeObservedRateAboveQuotaAboveLimit
        assert_eq!(bounded_throttle_time(100.0, 50.0, window(10), 500), 500);
    }

    #[test]
    fn rate_with_no_prior_available_samples() {
        // RateTest.testRateWithNoPriorAvailableSamples: "1,1", "1,11", "11,1", "11,11".
        for (samples, window_s) in [(1_u32, 1_u32), (1, 11), (11, 1), (11, 11)] {
            let mut rate = SampledRate::new(samples, u64::from(window_s) * 1000);
            rate.record(50.0, T0);
            let measurement_ms = window_s * 1000 - 1;
            let observed = rate.measure(T0 + u64::from(measurement_ms));
            let window =
                f64::from(measurement_ms) / 1000.0 + f64::from(samples - 1) * f64::from(window_s);
            assert!((observed - 50.0 / window).abs() < 1e-6, "{samples},{window_s}: {observed}");
        }
    }

    #[test]
    fn rate_is_consistent_after_the_first_window() {
        // RateTest.testRateIsConsistentAfterTheFirstWindow
        let mut rate = SampledRate::new(2, 1000);
        let steps = [0, 99, 100, 100, 100, 100, 100, 100, 100, 100, 100];
        let mut now = T0;
        for step in steps {
            now += step;
            rate.record(1.0, now);
        }
        now += 101;
        for step in steps {
            now += step;
            rate.record(1.0, now);
            let observed = rate.measure(now);
            assert!((10.0..=11.0).contains(&observed), "{observed}");
            assert!((rate.measure(now) - observed).abs() < f64::EPSILON);
        }
    }

    /// SampledStatTest.completeSample: events at the start and end of a window, clock after it.
    fn complete_sample(rate: &mut SampledRate, now: &mut u64) {
        rate.record(1.0, *now);
        *now += 999;
        rate.record(1.0, *now);
        *now += 1;
    }

    #[test]
    fn sampled_stat_purges_and_keeps_samples() {
        // testSampleIsPurgedIfDoesntOverlap
        let (mut rate, mut now) = (SampledRate::new(2, 1000), T0);
        complete_sample(&mut rate, &mut now);
        now += 2500;
        rate.measure(now);
        assert_eq!(rate.samples_with_events(), 0);
        // testSampleIsKeptIfOverlaps
        let (mut rate, mut now) = (SampledRate::new(2, 1000), T0);
        complete_sample(&mut rate, &mut now);
        now += 1500;
        rate.measure(now);
        assert_eq!(rate.samples_with_events(), 1);
        // testSampleIsKeptIfOverlapsAndExtra: three samples, the first overlapping the window.
        let (mut rate, mut now) = (SampledRate::new(2, 1000), T0);
        complete_sample(&mut rate, &mut now);
        now += 100;
        complete_sample(&mut rate, &mut now);
        now += 100;
        rate.record(1.0, now);
        rate.measure(now);
        assert_eq!(rate.samples_with_events(), 3);
        // 5 events over the 2200 ms since the oldest sample started.
        assert_eq!(rate.window_size(now), 2200);
        assert!((rate.measure(now) - 5.0 / 2.2).abs() < 1e-9);
    }

    #[test]
    fn rate_window_never_below_one_ms() {
        let mut rate = SampledRate::new(1, 1000);
        assert_eq!(rate.window_size(T0), 1);
        rate.record(3.0, T0);
        assert!((rate.measure(T0) - 3000.0).abs() < 1e-9);
        // Time going backwards neither panics nor yields a negative window.
        assert_eq!(rate.window_size(T0 - 10), 1);
        let mut zero = SampledRate::new(0, 0);
        zero.record(1.0, 0);
        assert!(zero.measure(u64::MAX).is_finite());
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("test address")
    }

    #[test]
    fn max_connections_per_ip() {
        // ConnectionQuotasTest.testMaxConnectionsPerIp
        let quotas = Arc::new(ConnectionQuotas::new(17, BTreeMap::new()));
        let default_ip = ip("127.0.0.1");
        let known_host = ip("192.168.1.2");
        let mut held: Vec<ConnectionPermit> =
            (0..17).map(|_| quotas.try_acquire(default_ip).expect("below the limit")).collect();
        assert_eq!(quotas.get(default_ip), 17);
        for _ in 0..2 {
            let err = quotas.try_acquire(default_ip).expect_err("above the limit");
            assert_eq!(err, TooManyConnections { ip: default_ip, max: 17 });
            assert_eq!(err.to_string(), "too many connections from 127.0.0.1 (maximum = 17)");
        }
        assert_eq!(quotas.get(default_ip), 17, "refused connections are not counted");
        let other: Vec<ConnectionPermit> =
            (0..17).map(|_| quotas.try_acquire(known_host).expect("another address")).collect();
        held.truncate(15);
        assert_eq!(quotas.get(default_ip), 15);
        held.extend((0..2).map(|_| quotas.try_acquire(default_ip).expect("freed slots")));
        assert_eq!(quotas.get(default_ip), 17);
        drop(held);
        drop(other);
        assert_eq!((quotas.get(default_ip), quotas.tracked_ips()), (0, 0));
    }

    #[test]
    fn no_connection_limits_by_default() {
        // ConnectionQuotasTest.testNoConnectionLimitsByDefault
        let quotas =
            Arc::new(ConnectionQuotas::new(DEFAULT_MAX_CONNECTIONS_PER_IP, BTreeMap::new()));
        let a = ip("10.0.0.1");
        let mut held: Vec<ConnectionPermit> =
            (0..10_000).map(|_| quotas.try_acquire(a).expect("no limit")).collect();
        assert_eq!(quotas.get(a), 10_000);
        held.pop();
        assert_eq!(quotas.get(a), 9_999);
    }

    #[test]
    fn zero_max_connections_per_ip_with_override() {
        // SocketServerTest.testZeroMaxConnectionsPerIp
        let overrides = ConnectionQuotas::parse_overrides("127.0.0.1:5").expect("valid");
        assert_eq!(ConnectionQuotas::validate_config(0, &overrides), Ok(()));
        let quotas = Arc::new(ConnectionQuotas::new(0, overrides));
        let held: Vec<_> =
            (0..5).map(|_| quotas.try_acquire(ip("127.0.0.1")).expect("override")).collect();
        assert_eq!(held.len(), 5);
        assert!(quotas.try_acquire(ip("127.0.0.1")).is_err());
        assert_eq!(
            quotas.try_acquire(ip("10.1.1.1")).expect_err("zero default"),
            TooManyConnections { ip: ip("10.1.1.1"), max: 0 }
        );
        let err = ConnectionQuotas::validate_config(0, &BTreeMap::new()).expect_err("no overrides");
        assert_eq!(err, QuotaError::ZeroMaxConnectionsWithoutOverrides);
    }

    #[test]
    fn max_connections_per_ip_overrides() {
        // SocketServerTest.testMaxConnectionsPerIpOverrides, with an IP literal for localhost.
        let quotas = Arc::new(ConnectionQuotas::new(
            2,
            ConnectionQuotas::parse_overrides("127.0.0.1:3").expect("valid"),
        ));
        let held: Vec<_> =
            (0..3).map(|_| quotas.try_acquire(ip("127.0.0.1")).expect("override")).collect();
        assert!(quotas.try_acquire(ip("127.0.0.1")).is_err());
        assert_eq!(quotas.max_connections(ip("127.0.0.1")), 3);
        assert_eq!(quotas.max_connections(ip("127.0.0.2")), 2);
        // An IPv4 client seen through a dual-stack listener counts as its IPv4 address.
        let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        assert!(quotas.try_acquire(mapped).is_err());
        drop(held);
        let permit = quotas.try_acquire(mapped).expect("freed");
        assert_eq!(permit.ip(), ip("127.0.0.1"));
        assert_eq!(format!("{permit:?}"), "ConnectionPermit { ip: 127.0.0.1, .. }");
        // Dynamic updates.
        quotas.update_overrides(BTreeMap::new());
        quotas.update_max_connections_per_ip(1);
        assert!(quotas.try_acquire(ip("127.0.0.1")).is_err());
    }

    #[test]
    fn parse_max_connections_per_ip_overrides() {
        let parsed = ConnectionQuotas::parse_overrides(" 127.0.0.1:5 , ::1:10,192.168.0.1:0,")
            .expect("valid");
        assert_eq!(
            parsed,
            BTreeMap::from([
                (ip("127.0.0.1"), 5),
                (ip("192.168.0.1"), 0),
                (IpAddr::V6(Ipv6Addr::LOCALHOST), 10),
            ])
        );
        assert_eq!(ConnectionQuotas::parse_overrides("").expect("empty"), BTreeMap::new());
        let cases: [(&str, QuotaError); 6] = [
            ("localhost:5", QuotaError::HostnameOverride { host: "localhost".to_owned() }),
            (
                "127.0.0.1",
                QuotaError::InvalidConnectionsOverride {
                    entry: "127.0.0.1".to_owned(),
                    reason: "expected host:count",
                },
            ),
            (
                "1.2.3.4:x",
                QuotaError::InvalidConnectionsOverride {
                    entry: "1.2.3.4:x".to_owned(),
                    reason: "the count is not an integer",
                },
            ),
            (
                "1.2.3.4:-1",
                QuotaError::InvalidConnectionsOverride {
                    entry: "1.2.3.4:-1".to_owned(),
                    reason: "the count is negative",
                },
            ),
            (
                "1.2.3.4:2147483648",
                QuotaError::InvalidConnectionsOverride {
                    entry: "1.2.3.4:2147483648".to_owned(),
                    reason: "the count is not an integer",
                },
            ),
            (
                "not a host:1",
                QuotaError::InvalidConnectionsOverride {
                    entry: "not a host:1".to_owned(),
                    reason: "the host is not a valid address",
                },
            ),
        ];
        for (input, want) in cases {
            assert_eq!(ConnectionQuotas::parse_overrides(input), Err(want), "{input}");
        }
        assert_eq!(
            QuotaError::HostnameOverride { host: "localhost".to_owned() }.to_string(),
            "max.connections.per.ip.overrides names host \"localhost\": host names are not resolved, give an IP address literal"
        );
    }

    #[test]
    fn connection_quotas_are_thread_safe() {
        let quotas = Arc::new(ConnectionQuotas::new(250, BTreeMap::new()));
        let a = ip("10.0.0.9");
        let permits: Vec<Vec<ConnectionPermit>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..100).filter_map(|_| quotas.try_acquire(a).ok()).collect()))
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        assert_eq!(permits.iter().map(Vec::len).sum::<usize>(), 250);
        assert_eq!(quotas.get(a), 250);
        std::thread::scope(|s| {
            for batch in permits {
                s.spawn(move || drop(batch));
            }
        });
        assert_eq!((quotas.get(a), quotas.tracked_ips()), (0, 0));
    }

    #[test]
    fn entity_from_wire_validation() {
        // ClientQuotaControlManagerTest.testInvalidEntityTypes, testConfigKeysForEmptyEntity,
        // testConfigKeysForEntityTypeWithIpAndUser, testConfigKeysForEntityTypeWithIpAndClientId
        type Wire<'a> = &'a [(&'a str, Option<&'a str>)];
        let cases: [(Wire<'_>, QuotaError); 8] = [
            (
                &[("foo", Some("bar"))],
                QuotaError::UnhandledEntityType { entity_type: "foo".to_owned() },
            ),
            (
                &[("user", Some("user-1")), ("foo", Some("bar"))],
                QuotaError::UnhandledEntityType { entity_type: "foo".to_owned() },
            ),
            (
                &[("foo", Some("bar")), ("ip", Some("1.2.3.4"))],
                QuotaError::UnhandledEntityType { entity_type: "foo".to_owned() },
            ),
            (&[("user", Some("user-1")), ("ip", Some("1.2.3.4"))], QuotaError::IpEntityCombination),
            (
                &[("client-id", Some("user-1")), ("ip", Some("1.2.3.4"))],
                QuotaError::IpEntityCombination,
            ),
            (&[], QuotaError::EmptyEntity),
            (&[("user", Some(""))], QuotaError::EmptyEntityName { entity_type: "user".to_owned() }),
            (
                &[("user", Some("a")), ("user", None)],
                QuotaError::DuplicateEntityEntry { entity_type: "user".to_owned() },
            ),
        ];
        for (wire, want) in cases {
            let got = ClientQuotaEntity::from_wire(wire.iter().copied());
            assert_eq!(got.as_ref().map_err(QuotaError::error_code).err(), Some(42));
            assert_eq!(got, Err(want), "{wire:?}");
        }
        assert_eq!(
            ClientQuotaEntity::from_wire([("ip", Some("1.2.3.4"))]),
            Err(QuotaError::IpEntityUnsupported)
        );
        let e = ClientQuotaEntity::from_wire([("client-id", Some("c")), ("user", None)])
            .expect("valid");
        assert_eq!(e, entity(dflt(), named("c")));
        assert_eq!(e.to_wire(), vec![("user", None), ("client-id", Some("c"))]);
        assert_eq!(e.to_string(), "ClientQuotaEntity(entries={user=null, client-id=c})");
        assert_eq!(QuotaError::EmptyEntity.to_string(), "Invalid empty client quota entity");
        assert_eq!(
            QuotaError::IpEntityCombination.to_string(),
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        );
        assert_eq!(
            QuotaError::EmptyEntityName { entity_type: "user".to_owned() }.to_string(),
            "Empty user not supported"
        );
    }

    #[test]
    fn validate_quota_key_value() {
        // ClientQuotaControlManagerTest.testValidateQuotaKeyValueFor*
        let cases: [(&str, f64, Option<&str>); 10] = [
            ("foobar", 1.0, Some("Invalid configuration key foobar")),
            ("producer_byte_rate", 0.0, Some("Quota producer_byte_rate must be greater than 0")),
            ("consumer_byte_rate", -2.0, Some("Quota consumer_byte_rate must be greater than 0")),
            ("consumer_byte_rate", 1234.0, None),
            (
                "consumer_byte_rate",
                36_893_488_147_419_103_232.4,
                Some("Proposed value for consumer_byte_rate is too large for a LONG."),
            ),
            ("consumer_byte_rate", 2.245, Some("consumer_byte_rate cannot be a fractional value.")),
            ("consumer_byte_rate", 1_235.000_000_1, None),
            ("request_percentage", 56.623_67, None),
            ("controller_mutation_rate", 0.5, None),
            (
                "request_percentage",
                f64::NAN,
                Some("Quota request_percentage must be greater than 0"),
            ),
        ];
        for (k, v, want) in cases {
            let got = validate_quota_value(k, v).map_err(|e| e.to_string());
            assert_eq!(got, want.map_or(Ok(()), |m| Err(m.to_owned())), "{k}={v}");
        }
    }

    #[test]
    fn invalid_quota_keys_change_nothing() {
        // ClientQuotaControlManagerTest.testInvalidQuotaKeys
        let mut store = ClientQuotas::new();
        let e = entity(named("user-1"), None);
        let err = store
            .alter_all(&e, &[("not.a.quota.key", Some(0.0)), (REQUEST_PERCENTAGE, Some(99.9))])
            .expect_err("invalid key");
        assert_eq!(err.to_string(), "Invalid configuration key not.a.quota.key");
        let err = store
            .alter_all(&e, &[(REQUEST_PERCENTAGE, Some(99.9)), ("not.a.quota.key", Some(0.0))])
            .expect_err("invalid key");
        assert_eq!(err, QuotaError::InvalidConfigKey { key: "not.a.quota.key".to_owned() });
        assert!(store.is_empty());
        // Duplicate keys: Kafka's final answer for the entity.
        let err = store
            .alter_all(&e, &[(REQUEST_PERCENTAGE, Some(1.0)), (REQUEST_PERCENTAGE, None)])
            .expect_err("duplicate key");
        assert_eq!(
            err.to_string(),
            "Ignoring duplicate entity ClientQuotaEntity(entries={user=user-1})"
        );
        // An empty entity built by hand.
        assert_eq!(
            store.alter(&entity(None, None), PRODUCER_BYTE_RATE, Some(1.0)),
            Err(QuotaError::EmptyEntity)
        );
        assert!(store.is_empty());
    }

    #[test]
    fn alter_and_remove() {
        // ClientQuotaControlManagerTest.testAlterAndRemove
        let mut store = ClientQuotas::new();
        let e = entity(named("user-1"), None);
        store.alter(&e, PRODUCER_BYTE_RATE, Some(10000.0)).expect("valid");
        assert_eq!(store.entries().next().map(|(_, q)| q.len()), Some(1));
        assert_eq!(store.get(&e, PRODUCER_BYTE_RATE), Some(10000.0));
        store
            .alter_all(
                &e,
                &[(PRODUCER_BYTE_RATE, Some(10001.0)), (CONSUMER_BYTE_RATE, Some(20000.0))],
            )
            .expect("valid");
        assert_eq!(store.get(&e, PRODUCER_BYTE_RATE), Some(10001.0));
        assert_eq!(store.get(&e, CONSUMER_BYTE_RATE), Some(20000.0));
        store.alter(&e, PRODUCER_BYTE_RATE, None).expect("removal");
        assert_eq!(store.get(&e, PRODUCER_BYTE_RATE), None);
        store.alter(&e, REQUEST_PERCENTAGE, None).expect("removing nothing");
        assert_eq!(store.get(&e, CONSUMER_BYTE_RATE), Some(20000.0));
        store.alter(&e, CONSUMER_BYTE_RATE, None).expect("removal");
        assert!(store.is_empty(), "an entity without quotas is dropped");
        store.alter(&e, CONSUMER_BYTE_RATE, None).expect("removing nothing");
        assert!(store.is_empty());
        store
            .alter_all(
                &e,
                &[
                    (REQUEST_PERCENTAGE, Some(99.0)),
                    (CONTROLLER_MUTATION_RATE, None),
                    (PRODUCER_BYTE_RATE, Some(10002.0)),
                    (CONSUMER_BYTE_RATE, Some(20001.0)),
                ],
            )
            .expect("mixed update");
        let all: Vec<_> = store.entries().map(|(e, q)| (e.clone(), q.clone())).collect();
        assert_eq!(
            all,
            vec![(
                e,
                BTreeMap::from([
                    (CONSUMER_BYTE_RATE.to_owned(), 20001.0),
                    (PRODUCER_BYTE_RATE.to_owned(), 10002.0),
                    (REQUEST_PERCENTAGE.to_owned(), 99.0),
                ])
            )]
        );
        assert_eq!(store.len(), 1);
    }

    /// ClientQuotasRequestTest.matchUserClientEntities (`Some(null)` is the default).
    fn match_store() -> (ClientQuotas, Vec<(ClientQuotaEntity, f64)>) {
        let rows = [
            (named("user-1"), named("client-id-1"), 50.50),
            (named("user-2"), named("client-id-1"), 51.51),
            (named("user-3"), named("client-id-2"), 52.52),
            (dflt(), named("client-id-1"), 53.53),
            (named("user-1"), dflt(), 54.54),
            (named("user-3"), dflt(), 55.55),
            (named("user-1"), None, 56.56),
            (named("user-2"), None, 57.57),
            (named("user-3"), None, 58.58),
            (dflt(), None, 59.59),
            (None, named("client-id-2"), 60.60),
        ];
        let mut store = ClientQuotas::new();
        let mut all = Vec::new();
        for (u, c, v) in rows {
            let e = entity(u, c);
            store.alter(&e, REQUEST_PERCENTAGE, Some(v)).expect("valid");
            all.push((e, v));
        }
        (store, all)
    }

    fn exact_components(e: &ClientQuotaEntity) -> Vec<FilterComponent> {
        e.to_wire()
            .into_iter()
            .map(|(t, n)| {
                n.map_or_else(
                    || FilterComponent::of_default_entity(t),
                    |n| FilterComponent::of_entity(t, n),
                )
            })
            .collect()
    }

    #[test]
    fn describe_client_quotas_match_exact() {
        let (store, all) = match_store();
        for (e, v) in &all {
            let got = store.describe(&exact_components(e), true).expect("valid filter");
            assert_eq!(
                got,
                vec![(e.clone(), BTreeMap::from([(REQUEST_PERCENTAGE.to_owned(), *v)]))]
            );
        }
        let not_matching = [
            entity(named("user-1"), named("client-id-2")),
            entity(named("user-3"), named("client-id-1")),
            entity(named("user-2"), dflt()),
            entity(named("user-4"), None),
            entity(dflt(), named("client-id-2")),
            entity(None, named("client-id-1")),
            entity(None, named("client-id-3")),
        ];
        for e in &not_matching {
            assert_eq!(
                store.describe(&exact_components(e), true).expect("valid filter"),
                vec![],
                "{e}"
            );
        }
    }

    #[test]
    fn describe_client_quotas_match_partial() {
        type Pick = fn(&ClientQuotaEntity) -> bool;
        let (store, all) = match_store();
        let user = ENTITY_TYPE_USER;
        let client = ENTITY_TYPE_CLIENT_ID;
        let cases: [(Vec<FilterComponent>, bool, usize, Pick); 13] = [
            (vec![FilterComponent::of_entity(user, "user-1")], false, 3, |e| {
                e.user == named("user-1")
            }),
            (vec![FilterComponent::of_entity(user, "unknown")], false, 0, |_| false),
            (vec![FilterComponent::of_entity(client, "client-id-2")], false, 2, |e| {
                e.client_id == named("client-id-2")
            }),
            (vec![FilterComponent::of_default_entity(user)], false, 2, |e| e.user == dflt()),
            (vec![FilterComponent::of_entity(user, "user-2")], true, 1, |e| {
                e.user == named("user-2") && e.client_id.is_none()
            }),
            (vec![FilterComponent::of_entity(client, "client-id-1")], true, 0, |_| false),
            // MATCH_TYPE_SPECIFIED matches the default entity too (4 includes <default> user).
            (vec![FilterComponent::of_entity_type(user)], true, 4, |e| {
                e.user.is_some() && e.client_id.is_none()
            }),
            (vec![FilterComponent::of_entity_type(user)], false, 10, |e| e.user.is_some()),
            (vec![FilterComponent::of_entity_type(client)], true, 1, |e| {
                e.client_id.is_some() && e.user.is_none()
            }),
            (vec![FilterComponent::of_entity_type(client)], false, 7, |e| e.client_id.is_some()),
            // Kafka's test has two ip entities here; no ip quotas are kept by this broker.
            (vec![FilterComponent::of_entity_type(ENTITY_TYPE_IP)], false, 0, |_| false),
            (vec![], false, 11, |_| true),
            (vec![], true, 0, |_| false),
        ];
        for (components, strict, count, pick) in cases {
            let got = store.describe(&components, strict).expect("valid filter");
            let want: Vec<_> = all
                .iter()
                .filter(|(e, _)| pick(e))
                .map(|(e, v)| (e.clone(), BTreeMap::from([(REQUEST_PERCENTAGE.to_owned(), *v)])))
                .collect();
            assert_eq!(want.len(), count, "{components:?}");
            let mut got_sorted = got.clone();
            got_sorted.sort_by(|a, b| a.0.cmp(&b.0));
            let mut want_sorted = want;
            want_sorted.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(got_sorted, want_sorted, "{components:?} strict={strict}");
        }
    }

    #[test]
    fn describe_filter_errors() {
        // testDescribeClientQuotasInvalidFilterCombination, testClientQuotasUnsupportedEntityTypes
        // and ClientQuotasImage.describe's other checks.
        let store = match_store().0;
        let component = |t: &str, m: i8, n: Option<&str>| FilterComponent {
            entity_type: t.to_owned(),
            match_type: m,
            match_name: n.map(str::to_owned),
        };
        let cases: [(Vec<FilterComponent>, &str, i16); 9] = [
            (
                vec![
                    FilterComponent::of_entity_type("ip"),
                    FilterComponent::of_entity_type("user"),
                ],
                "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.",
                42,
            ),
            (
                vec![
                    FilterComponent::of_entity_type("ip"),
                    FilterComponent::of_default_entity("client-id"),
                ],
                "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.",
                42,
            ),
            (
                vec![FilterComponent::of_entity("other", "name")],
                "Unsupported entity type other",
                35,
            ),
            (vec![FilterComponent::of_entity_type("")], "Invalid empty entity type.", 42),
            (
                vec![
                    FilterComponent::of_entity("user", "a"),
                    FilterComponent::of_entity_type("user"),
                ],
                "Entity type user cannot appear more than once in the filter.",
                42,
            ),
            (
                vec![component("user", MATCH_TYPE_EXACT, None)],
                "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                42,
            ),
            (
                vec![component("user", MATCH_TYPE_DEFAULT, Some("a"))],
                "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                42,
            ),
            (
                vec![component("user", MATCH_TYPE_SPECIFIED, Some("a"))],
                "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                42,
            ),
            (vec![component("user", 5, None)], "Unknown match type 5", 42),
        ];
        for (components, text, code) in cases {
            let err = store.describe(&components, false).expect_err("invalid filter");
            assert_eq!(
                (err.to_string().as_str(), err.error_code()),
                (text, code),
                "{components:?}"
            );
        }
    }

    #[test]
    fn client_quotas_with_default_name() {
        // ClientQuotasRequestTest.testClientQuotasWithDefaultName: a client-id literally called
        // `<default>` is not the default entity.
        let mut store = ClientQuotas::new();
        let e = ClientQuotaEntity::from_wire([("client-id", Some("<default>"))]).expect("valid");
        store.alter(&e, PRODUCER_BYTE_RATE, Some(20000.0)).expect("valid");
        let got = store.describe(&exact_components(&e), true).expect("valid");
        assert_eq!(got, vec![(e, BTreeMap::from([(PRODUCER_BYTE_RATE.to_owned(), 20000.0)]))]);
        let defaults = store
            .describe(&[FilterComponent::of_default_entity("client-id")], true)
            .expect("valid");
        assert_eq!(defaults, vec![]);
        assert_eq!(store.quota_for(QuotaType::Produce, "u", "other"), None);
        assert_eq!(
            store.quota_for(QuotaType::Produce, "u", "<default>"),
            Some((key("", "<default>"), 20000.0))
        );
    }
}
