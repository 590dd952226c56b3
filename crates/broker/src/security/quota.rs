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

    /// Kafka's `SimpleRate.measure` (the replication quotas' rate): the windowed sum divided by
    /// the time since the oldest retained sample started, counted as at least one window.
    pub(crate) fn measure_simple(&mut self, now_ms: u64) -> f64 {
        let now = ms_to_i64(now_ms);
        let oldest = self.oldest_start_ms(now);
        let window_size_ms = now.saturating_sub(oldest).max(self.window_ms);
        let total: f64 = self.stat.iter().map(|s| s.value).sum();
        total / (ms_to_f64(window_size_ms) / 1000.0)
    }

    /// Kafka's `Rate.windowSize`: the time since the oldest retained sample started, counted
    /// as at least `samples - 1` full windows, and at least 1 ms.
    pub(crate) fn window_size(&mut self, now_ms: u64) -> i64 {
        let now = ms_to_i64(now_ms);
        let oldest = self.oldest_start_ms(now);
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

    /// When the oldest retained sample started, after purging (Kafka's `SampledStat.oldest`:
    /// a sample starting now when there is none).
    fn oldest_start_ms(&mut self, now: i64) -> i64 {
        self.purge_obsolete_samples(now);
        if self.stat.is_empty() {
            self.stat.push(Sample::new(now));
            self.current = 0;
        }
        self.stat.iter().map(|s| s.start_ms).min().unwrap_or(now)
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
#[path = "quota_tests.rs"]
mod tests;
