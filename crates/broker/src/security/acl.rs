//! Kafka's ACL model and its authorizer: the enums and bindings of
//! `org.apache.kafka.common.acl` (`AclBinding`, `AclBindingFilter`, `AccessControlEntry(Filter)`,
//! `AclOperation`, `AclPermissionType`) and `org.apache.kafka.common.resource`
//! (`ResourcePattern(Filter)`, `ResourceType`, `PatternType`), the checks `AclControlManager` and
//! the broker's `AclApis` make on CreateAcls, and the decisions of KRaft's `StandardAuthorizer`
//! (`StandardAuthorizerData.authorize`, `Authorizer.authorizeByResourceType`) with the
//! authorized-operations bit field of Metadata, DescribeCluster and DescribeGroups.
//!
//! Principals and hosts are strings as ACLs carry them: `User:alice`, `User:*`, `192.168.0.1`,
//! `*` (the host is the client's IP address as `InetAddress.getHostAddress` prints it).

#![cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "Kafka's whole ACL model; the filters' helpers and the index's views serve the tests and the cluster's metadata next"
    )
)]

use std::collections::btree_map::Entry as MapEntry;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::ops::Bound;
use std::str::FromStr;

use super::principal::KafkaPrincipal;

/// The resource name of a LITERAL pattern that matches every name
/// (`ResourcePattern.WILDCARD_RESOURCE`).
pub(crate) const WILDCARD_RESOURCE: &str = "*";
/// The principal of an ACL that matches every principal (`AclEntry.WILDCARD_PRINCIPAL_STRING`).
pub(crate) const WILDCARD_PRINCIPAL: &str = "User:*";
/// The host of an ACL that matches every host (`AclEntry.WILDCARD_HOST`).
pub(crate) const WILDCARD_HOST: &str = "*";
/// The one name of the CLUSTER resource (`Resource.CLUSTER_NAME`).
pub(crate) const CLUSTER_NAME: &str = "kafka-cluster";

/// Why an ACL, a filter or a name was refused. The texts Kafka has are kept as Kafka writes
/// them (capital letter and all): they go to clients as the message of an INVALID_REQUEST error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AclError {
    /// A CLUSTER ACL named other than `kafka-cluster` (`AclApis.handleCreateAcls`).
    #[error("The only valid name for the CLUSTER resource is kafka-cluster")]
    InvalidClusterResourceName,
    /// An ACL with an empty resource name (`AclApis.handleCreateAcls`).
    #[error("Invalid empty resource name")]
    EmptyResourceName,
    /// An ACL whose resource type is UNKNOWN or ANY (`AclControlManager.validateNewAcl`).
    #[error("Invalid resourceType {}", .0.java_name())]
    InvalidResourceType(ResourceType),
    /// An ACL whose pattern type is not LITERAL or PREFIXED (`AclControlManager.validateNewAcl`).
    #[error("Invalid patternType {}", .0.java_name())]
    InvalidPatternType(PatternType),
    /// An ACL whose operation is UNKNOWN or ANY (`AclControlManager.validateNewAcl`).
    #[error("Invalid operation {}", .0.java_name())]
    InvalidOperation(AclOperation),
    /// An ACL whose permission is not ALLOW or DENY (`AclControlManager.validateNewAcl`).
    #[error("Invalid permissionType {}", .0.java_name())]
    InvalidPermissionType(AclPermissionType),
    /// A principal that is not `Type:name` (`SecurityUtils.parseKafkaPrincipal`).
    #[error("expected a string in format principalType:principalName but got {0}")]
    InvalidPrincipal(String),
    /// An ACL on a DELEGATION_TOKEN resource.
    #[error("seglog has no delegation tokens")]
    DelegationTokensUnsupported,
    /// A filter whose resource or pattern type is UNKNOWN (`AclControlManager.validateFilter`).
    #[error("Unknown patternFilter.")]
    UnknownPatternFilter,
    /// A filter whose operation or permission is UNKNOWN (`AclControlManager.validateFilter`).
    #[error("Unknown entryFilter.")]
    UnknownEntryFilter,
    /// A name the `kafka-acls` style parser does not know.
    #[error("unknown {kind} `{name}`")]
    UnknownName { kind: &'static str, name: String },
}

/// Declares one of Kafka's byte-coded enums: its codes, its Java constant names (`CLUSTER_ACTION`),
/// its display names (`ClusterAction`, as `SecurityUtils` and `kafka-acls` print them) and a
/// parser from names.
macro_rules! kafka_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $kind:literal {
            $($(#[$vmeta:meta])* $variant:ident = $code:literal, $java:literal, $display:literal;)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(crate) enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in code order.
            pub(crate) const VALUES: &'static [$name] = &[$($name::$variant,)+];

            /// The wire code.
            pub(crate) const fn code(self) -> i8 {
                match self {
                    $($name::$variant => $code,)+
                }
            }

            /// The value of a wire code; `None` for a code Kafka does not define (Kafka's
            /// `fromCode` maps those to UNKNOWN).
            pub(crate) const fn from_code(code: i8) -> Option<Self> {
                match code {
                    $($code => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The Java constant name (`TRANSACTIONAL_ID`), as Kafka's `toString` prints it.
            pub(crate) const fn java_name(self) -> &'static str {
                match self {
                    $($name::$variant => $java,)+
                }
            }

            /// The display name (`TransactionalId`), as `SecurityUtils` and `kafka-acls` print it.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $display,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $name {
            type Err = AclError;

            /// Parses a name `kafka-acls` style: case-insensitive, `_` and `-` ignored, so
            /// `read`, `Read`, `READ`, `ClusterAction`, `cluster_action` and `cluster-action`
            /// are all accepted. UNKNOWN is never the result.
            fn from_str(s: &str) -> Result<Self, AclError> {
                let wanted = normalize_name(s);
                $name::VALUES
                    .iter()
                    .copied()
                    .filter(|value| value.code() != 0)
                    .find(|value| value.name().eq_ignore_ascii_case(&wanted))
                    .ok_or_else(|| AclError::UnknownName { kind: $kind, name: s.to_owned() })
            }
        }
    };
}

/// A name with `_` and `-` removed and surrounding whitespace trimmed, for `FromStr`.
fn normalize_name(s: &str) -> String {
    s.trim().chars().filter(|c| *c != '_' && *c != '-').collect()
}

kafka_enum! {
    /// Kafka's `ResourceType`: what kind of resource an ACL protects.
    ResourceType, "resource type" {
        /// A code this broker does not know.
        Unknown = 0, "UNKNOWN", "Unknown";
        /// Any type: filters only.
        Any = 1, "ANY", "Any";
        /// A topic.
        Topic = 2, "TOPIC", "Topic";
        /// A consumer group.
        Group = 3, "GROUP", "Group";
        /// The cluster (named `kafka-cluster`).
        Cluster = 4, "CLUSTER", "Cluster";
        /// A transactional id.
        TransactionalId = 5, "TRANSACTIONAL_ID", "TransactionalId";
        /// A delegation token (seglog has none).
        DelegationToken = 6, "DELEGATION_TOKEN", "DelegationToken";
        /// A user, for CreateTokens and DescribeTokens.
        User = 7, "USER", "User";
    }
}

kafka_enum! {
    /// Kafka's `AclOperation`: what an ACL allows or denies.
    AclOperation, "operation" {
        /// A code this broker does not know.
        Unknown = 0, "UNKNOWN", "Unknown";
        /// Any operation: filters only.
        Any = 1, "ANY", "Any";
        /// Every operation.
        All = 2, "ALL", "All";
        /// Read.
        Read = 3, "READ", "Read";
        /// Write.
        Write = 4, "WRITE", "Write";
        /// Create.
        Create = 5, "CREATE", "Create";
        /// Delete.
        Delete = 6, "DELETE", "Delete";
        /// Alter.
        Alter = 7, "ALTER", "Alter";
        /// Describe (implied by an ALLOW of Read, Write, Delete or Alter).
        Describe = 8, "DESCRIBE", "Describe";
        /// Cluster action (inter-broker requests).
        ClusterAction = 9, "CLUSTER_ACTION", "ClusterAction";
        /// Describe configs (implied by an ALLOW of AlterConfigs).
        DescribeConfigs = 10, "DESCRIBE_CONFIGS", "DescribeConfigs";
        /// Alter configs.
        AlterConfigs = 11, "ALTER_CONFIGS", "AlterConfigs";
        /// Idempotent write.
        IdempotentWrite = 12, "IDEMPOTENT_WRITE", "IdempotentWrite";
        /// Create delegation tokens.
        CreateTokens = 13, "CREATE_TOKENS", "CreateTokens";
        /// Describe delegation tokens.
        DescribeTokens = 14, "DESCRIBE_TOKENS", "DescribeTokens";
    }
}

kafka_enum! {
    /// Kafka's `PatternType`: how an ACL's resource name matches resources.
    PatternType, "pattern type" {
        /// A code this broker does not know.
        Unknown = 0, "UNKNOWN", "Unknown";
        /// Any pattern type: filters only; the filter's name must equal the ACL's.
        Any = 1, "ANY", "Any";
        /// Filters only: every ACL that would apply to the filter's name (the literal name,
        /// the wildcard `*`, and every prefix of it).
        Match = 2, "MATCH", "Match";
        /// The name is the resource's name, or `*` for every resource.
        Literal = 3, "LITERAL", "Literal";
        /// The name is a prefix of the resources' names.
        Prefixed = 4, "PREFIXED", "Prefixed";
    }
}

kafka_enum! {
    /// Kafka's `AclPermissionType`: whether an ACL allows or denies.
    AclPermissionType, "permission type" {
        /// A code this broker does not know.
        Unknown = 0, "UNKNOWN", "Unknown";
        /// Any permission: filters only.
        Any = 1, "ANY", "Any";
        /// Deny; a matching DENY wins over every ALLOW.
        Deny = 2, "DENY", "Deny";
        /// Allow.
        Allow = 3, "ALLOW", "Allow";
    }
}

/// The operations that apply to a resource type, whose bits the authorized-operations fields
/// carry (Kafka's `AclEntry.supportedOperations`). Empty for UNKNOWN and ANY.
pub(crate) fn supported_operations(resource_type: ResourceType) -> &'static [AclOperation] {
    use AclOperation::{
        Alter, AlterConfigs, ClusterAction, Create, CreateTokens, Delete, Describe,
        DescribeConfigs, DescribeTokens, IdempotentWrite, Read, Write,
    };
    match resource_type {
        ResourceType::Topic => {
            &[Read, Write, Create, Describe, Delete, Alter, DescribeConfigs, AlterConfigs]
        }
        // Kafka 3.9's: DescribeConfigs and AlterConfigs join in 4.0, with group configs, which
        // seglog does not serve (a GROUP config resource is INVALID_REQUEST, as in 3.9).
        ResourceType::Group => &[Read, Describe, Delete],
        ResourceType::Cluster => &[
            Create,
            ClusterAction,
            DescribeConfigs,
            AlterConfigs,
            IdempotentWrite,
            Alter,
            Describe,
        ],
        ResourceType::TransactionalId => &[Describe, Write],
        ResourceType::DelegationToken => &[Describe],
        ResourceType::User => &[CreateTokens, DescribeTokens],
        ResourceType::Unknown | ResourceType::Any => &[],
    }
}

/// The bit field of a set of operations (`1 << code` each; Kafka's `Utils.to32BitField`), as
/// Metadata and DescribeGroups return authorized operations when no authorizer is configured.
pub(crate) fn operations_bit_field(operations: &[AclOperation]) -> i32 {
    operations.iter().fold(0, |bits, op| bits | (1 << op.code()))
}

/// Kafka's `AclBinding` (a `ResourcePattern` and an `AccessControlEntry`): one ACL.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct AclBinding {
    pub(crate) resource_type: ResourceType,
    pub(crate) resource_name: String,
    pub(crate) pattern_type: PatternType,
    /// `Type:name`, such as `User:alice`, or `User:*` for every principal.
    pub(crate) principal: String,
    /// An IP address, or `*` for every host.
    pub(crate) host: String,
    pub(crate) operation: AclOperation,
    pub(crate) permission: AclPermissionType,
}

impl AclBinding {
    /// The filter that matches exactly this binding (Kafka's `AclBinding.toFilter`).
    pub(crate) fn to_filter(&self) -> AclBindingFilter {
        AclBindingFilter {
            resource_type: self.resource_type,
            resource_name: Some(self.resource_name.clone()),
            pattern_type: self.pattern_type,
            principal: Some(self.principal.clone()),
            host: Some(self.host.clone()),
            operation: self.operation,
            permission: self.permission,
        }
    }
}

impl fmt::Display for AclBinding {
    /// Kafka's `AclBinding.toString`: `(pattern=ResourcePattern(resourceType=TOPIC, name=foo,
    /// patternType=LITERAL), entry=(principal=User:alice, host=*, operation=READ,
    /// permissionType=ALLOW))`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(pattern=ResourcePattern(resourceType={}, name={}, patternType={}), \
             entry=(principal={}, host={}, operation={}, permissionType={}))",
            self.resource_type.java_name(),
            self.resource_name,
            self.pattern_type.java_name(),
            self.principal,
            self.host,
            self.operation.java_name(),
            self.permission.java_name(),
        )
    }
}

/// Kafka's `AclBindingFilter` (a `ResourcePatternFilter` and an `AccessControlEntryFilter`), as
/// DescribeAcls and DeleteAcls carry it: `None` names, principals and hosts and the ANY types
/// match everything; the MATCH pattern type matches every ACL that applies to the name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AclBindingFilter {
    pub(crate) resource_type: ResourceType,
    pub(crate) resource_name: Option<String>,
    pub(crate) pattern_type: PatternType,
    pub(crate) principal: Option<String>,
    pub(crate) host: Option<String>,
    pub(crate) operation: AclOperation,
    pub(crate) permission: AclPermissionType,
}

impl AclBindingFilter {
    /// The filter that matches every ACL (Kafka's `AclBindingFilter.ANY`).
    pub(crate) const ANY: AclBindingFilter = AclBindingFilter {
        resource_type: ResourceType::Any,
        resource_name: None,
        pattern_type: PatternType::Any,
        principal: None,
        host: None,
        operation: AclOperation::Any,
        permission: AclPermissionType::Any,
    };

    /// Whether the binding passes this filter (Kafka's `AclBindingFilter.matches`, that is
    /// `ResourcePatternFilter.matches` and `AccessControlEntryFilter.matches`).
    pub(crate) fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern_matches(binding) && self.entry_matches(binding)
    }

    /// Kafka's `ResourcePatternFilter.matches`.
    fn pattern_matches(&self, binding: &AclBinding) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != binding.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match)
            && self.pattern_type != binding.pattern_type
        {
            return false;
        }
        let Some(name) = &self.resource_name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == binding.pattern_type {
            return *name == binding.resource_name;
        }
        // MATCH against a stored pattern.
        match binding.pattern_type {
            PatternType::Literal => {
                *name == binding.resource_name || binding.resource_name == WILDCARD_RESOURCE
            }
            PatternType::Prefixed => name.starts_with(binding.resource_name.as_str()),
            // Kafka throws "Unsupported PatternType"; no stored ACL has another pattern type.
            PatternType::Unknown | PatternType::Any | PatternType::Match => false,
        }
    }

    /// Kafka's `AccessControlEntryFilter.matches`.
    fn entry_matches(&self, binding: &AclBinding) -> bool {
        self.principal.as_ref().is_none_or(|principal| *principal == binding.principal)
            && self.host.as_ref().is_none_or(|host| *host == binding.host)
            && (self.operation == AclOperation::Any || self.operation == binding.operation)
            && (self.permission == AclPermissionType::Any || self.permission == binding.permission)
    }

    /// Whether a part of the filter is UNKNOWN (Kafka's `AclBindingFilter.isUnknown`).
    pub(crate) fn is_unknown(&self) -> bool {
        self.resource_type == ResourceType::Unknown
            || self.pattern_type == PatternType::Unknown
            || self.operation == AclOperation::Unknown
            || self.permission == AclPermissionType::Unknown
    }

    /// The first field that keeps this filter from naming exactly one ACL, as Kafka's
    /// `AclBindingFilter.findIndefiniteField` words it (`None` when the filter is definite).
    pub(crate) fn find_indefinite_field(&self) -> Option<&'static str> {
        match self.resource_type {
            ResourceType::Any => return Some("Resource type is ANY."),
            ResourceType::Unknown => return Some("Resource type is UNKNOWN."),
            _ => {}
        }
        if self.resource_name.is_none() {
            return Some("Resource name is NULL.");
        }
        match self.pattern_type {
            PatternType::Match => return Some("Resource pattern type is MATCH."),
            PatternType::Unknown => return Some("Resource pattern type is UNKNOWN."),
            _ => {}
        }
        if self.principal.is_none() {
            return Some("Principal is NULL");
        }
        if self.host.is_none() {
            return Some("Host is NULL");
        }
        match self.operation {
            AclOperation::Any => return Some("Operation is ANY"),
            AclOperation::Unknown => return Some("Operation is UNKNOWN"),
            _ => {}
        }
        match self.permission {
            AclPermissionType::Any => Some("Permission type is ANY"),
            AclPermissionType::Unknown => Some("Permission type is UNKNOWN"),
            _ => None,
        }
    }
}

impl fmt::Display for AclBindingFilter {
    /// Kafka's `AclBindingFilter.toString`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let any = "<any>";
        write!(
            f,
            "(patternFilter=ResourcePattern(resourceType={}, name={}, patternType={}), \
             entryFilter=(principal={}, host={}, operation={}, permissionType={}))",
            self.resource_type.java_name(),
            self.resource_name.as_deref().unwrap_or(any),
            self.pattern_type.java_name(),
            self.principal.as_deref().unwrap_or(any),
            self.host.as_deref().unwrap_or(any),
            self.operation.java_name(),
            self.permission.java_name(),
        )
    }
}

/// The checks on a DescribeAcls or DeleteAcls filter (Kafka's `AclControlManager.validateFilter`;
/// the request parsers also refuse UNKNOWN codes): a filter with an UNKNOWN part is refused.
/// Filters with ANY parts, or without name, principal or host, are valid.
pub(crate) fn validate_filter(filter: &AclBindingFilter) -> Result<(), AclError> {
    if filter.resource_type == ResourceType::Unknown || filter.pattern_type == PatternType::Unknown
    {
        return Err(AclError::UnknownPatternFilter);
    }
    if filter.operation == AclOperation::Unknown || filter.permission == AclPermissionType::Unknown
    {
        return Err(AclError::UnknownEntryFilter);
    }
    Ok(())
}

/// The checks on an ACL of a CreateAcls request, in Kafka's order: the broker's
/// (`AclApis.handleCreateAcls`: the CLUSTER name, an empty name), the controller's
/// (`AclControlManager.validateNewAcl`: resource type, pattern type, operation, permission), the
/// principal (`SecurityUtils.parseKafkaPrincipal`, as the ZooKeeper-era `AclAuthorizer` checked
/// it), then seglog's own refusal of DELEGATION_TOKEN resources.
pub(crate) fn validate_new_acl(binding: &AclBinding) -> Result<(), AclError> {
    if binding.resource_type == ResourceType::Cluster && binding.resource_name != CLUSTER_NAME {
        return Err(AclError::InvalidClusterResourceName);
    }
    if binding.resource_name.is_empty() {
        return Err(AclError::EmptyResourceName);
    }
    if matches!(binding.resource_type, ResourceType::Unknown | ResourceType::Any) {
        return Err(AclError::InvalidResourceType(binding.resource_type));
    }
    if !matches!(binding.pattern_type, PatternType::Literal | PatternType::Prefixed) {
        return Err(AclError::InvalidPatternType(binding.pattern_type));
    }
    if matches!(binding.operation, AclOperation::Unknown | AclOperation::Any) {
        return Err(AclError::InvalidOperation(binding.operation));
    }
    if !matches!(binding.permission, AclPermissionType::Allow | AclPermissionType::Deny) {
        return Err(AclError::InvalidPermissionType(binding.permission));
    }
    if KafkaPrincipal::parse(&binding.principal).is_err() {
        return Err(AclError::InvalidPrincipal(binding.principal.clone()));
    }
    if binding.resource_type == ResourceType::DelegationToken {
        return Err(AclError::DelegationTokensUnsupported);
    }
    Ok(())
}

/// The principals of `super.users` (`User:a;User:b`, Kafka's
/// `StandardAuthorizer.getConfiguredSuperUsers`): split on `;`, trimmed, empty parts skipped,
/// each checked to be `Type:name`; duplicates are dropped, the first order kept.
pub(crate) fn parse_super_users(config: &str) -> Result<Vec<String>, AclError> {
    let mut users: Vec<String> = Vec::new();
    for part in config.split(';') {
        let user = java_trim(part);
        if user.is_empty() {
            continue;
        }
        if KafkaPrincipal::parse(user).is_err() {
            return Err(AclError::InvalidPrincipal(user.to_owned()));
        }
        if !users.iter().any(|known| known == user) {
            users.push(user.to_owned());
        }
    }
    Ok(users)
}

/// Java's `String.trim`: strips characters up to U+0020 from both ends.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// The entry part of a stored ACL (Kafka's `AccessControlEntry`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct AccessControlEntry {
    principal: String,
    host: String,
    operation: AclOperation,
    permission: AclPermissionType,
}

impl AccessControlEntry {
    /// Kafka's `StandardAuthorizerData.findResult`: what this ACL (whose resource matched) says
    /// about the action, or `None` when its principal, host or operation does not apply.
    fn find_result(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
    ) -> Option<AclPermissionType> {
        if self.principal != principal && self.principal != WILDCARD_PRINCIPAL {
            return None;
        }
        if self.host != WILDCARD_HOST && self.host != host {
            return None;
        }
        if self.operation != AclOperation::All {
            if self.permission == AclPermissionType::Allow {
                // Implied operations apply to ALLOW ACLs only.
                let applies = match operation {
                    AclOperation::Describe => matches!(
                        self.operation,
                        AclOperation::Describe
                            | AclOperation::Read
                            | AclOperation::Write
                            | AclOperation::Delete
                            | AclOperation::Alter
                    ),
                    AclOperation::DescribeConfigs => matches!(
                        self.operation,
                        AclOperation::DescribeConfigs | AclOperation::AlterConfigs
                    ),
                    _ => self.operation == operation,
                };
                if !applies {
                    return None;
                }
            } else if self.operation != operation {
                return None;
            }
        }
        // As in Kafka, anything but ALLOW counts as DENY.
        Some(if self.permission == AclPermissionType::Allow {
            AclPermissionType::Allow
        } else {
            AclPermissionType::Deny
        })
    }
}

/// The ACLs of one resource name, by entry.
type EntrySet = BTreeSet<AccessControlEntry>;

/// The ACLs of one resource type: LITERAL ones by name (the wildcard is the name `*`) and
/// PREFIXED ones by prefix. No set is ever empty.
#[derive(Debug, Default)]
struct TypeAcls {
    literal: BTreeMap<String, EntrySet>,
    prefixed: BTreeMap<String, EntrySet>,
}

impl TypeAcls {
    fn map(&self, pattern_type: PatternType) -> Option<&BTreeMap<String, EntrySet>> {
        match pattern_type {
            PatternType::Literal => Some(&self.literal),
            PatternType::Prefixed => Some(&self.prefixed),
            PatternType::Unknown | PatternType::Any | PatternType::Match => None,
        }
    }

    fn map_mut(&mut self, pattern_type: PatternType) -> Option<&mut BTreeMap<String, EntrySet>> {
        match pattern_type {
            PatternType::Literal => Some(&mut self.literal),
            PatternType::Prefixed => Some(&mut self.prefixed),
            PatternType::Unknown | PatternType::Any | PatternType::Match => None,
        }
    }

    fn is_empty(&self) -> bool {
        self.literal.is_empty() && self.prefixed.is_empty()
    }

    /// Every set of ACLs whose pattern applies to the resource `name`: the LITERAL `name`, the
    /// LITERAL `*`, and each PREFIXED prefix of `name`, with their pattern types and names.
    fn matching<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = (PatternType, &'a str, &'a EntrySet)> + 'a {
        let literal = self.literal.get_key_value(name);
        let wildcard = if name == WILDCARD_RESOURCE {
            None
        } else {
            self.literal.get_key_value(WILDCARD_RESOURCE)
        };
        literal
            .into_iter()
            .chain(wildcard)
            .map(|(key, set)| (PatternType::Literal, key.as_str(), set))
            .chain(
                PrefixMatches::new(&self.prefixed, name)
                    .map(|(key, set)| (PatternType::Prefixed, key, set)),
            )
    }
}

/// The PREFIXED entries whose prefix starts `name`, longest first, found as
/// `StandardAuthorizerData.checkSection` finds them: from the greatest key not above `name`,
/// stepping down and jumping to the point where a key diverges from `name`, so the cost is
/// bounded by the matches plus the length of `name`, not by the number of ACLs.
struct PrefixMatches<'a> {
    prefixed: &'a BTreeMap<String, EntrySet>,
    name: &'a str,
    /// The upper bound of the next search; `None` when done.
    upper: Option<Bound<&'a str>>,
}

impl<'a> PrefixMatches<'a> {
    fn new(prefixed: &'a BTreeMap<String, EntrySet>, name: &'a str) -> Self {
        let upper = if prefixed.is_empty() { None } else { Some(Bound::Included(name)) };
        Self { prefixed, name, upper }
    }
}

impl<'a> Iterator for PrefixMatches<'a> {
    type Item = (&'a str, &'a EntrySet);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let upper = self.upper?;
            let Some((key, set)) =
                self.prefixed.range::<str, _>((Bound::Unbounded, upper)).next_back()
            else {
                self.upper = None;
                return None;
            };
            if self.name.starts_with(key.as_str()) {
                // Every remaining prefix is shorter than this one, so sorts below it.
                self.upper = if key.is_empty() { None } else { Some(Bound::Excluded(key)) };
                return Some((key, set));
            }
            // No prefix of `name` lies between the divergence point and `key`: jump there. The
            // bound shrinks every time, so the loop ends.
            let common = common_prefix_len(key, self.name);
            self.upper = Some(Bound::Included(self.name.get(..common)?));
        }
    }
}

/// The length of the longest common prefix of `a` and `b`, at a character boundary of `b`.
fn common_prefix_len(a: &str, b: &str) -> usize {
    let mut len = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !b.is_char_boundary(len) {
        len -= 1;
    }
    len
}

/// Kafka's `StandardAuthorizer` (with its `StandardAuthorizerData`): the ACLs and the
/// `super.users` / `allow.everyone.if.no.acl.found` configuration, and the decisions.
///
/// ACLs are kept by resource type, then LITERAL by name and PREFIXED in a sorted map by prefix,
/// so a decision looks up the literal name, the wildcard and the matching prefixes without
/// scanning every ACL.
#[derive(Debug)]
pub(crate) struct Authorizer {
    super_users: HashSet<String>,
    allow_everyone_if_no_acl_found: bool,
    by_type: BTreeMap<ResourceType, TypeAcls>,
    count: usize,
}

impl Authorizer {
    /// An authorizer without ACLs. `super_users` are principals (`User:admin`), as
    /// [`parse_super_users`] reads them from `super.users`.
    pub(crate) fn new(super_users: Vec<String>, allow_everyone_if_no_acl_found: bool) -> Self {
        Self {
            super_users: super_users.into_iter().collect(),
            allow_everyone_if_no_acl_found,
            by_type: BTreeMap::new(),
            count: 0,
        }
    }

    /// The same settings without any ACL (a cluster's broker rebuilds its ACLs from the
    /// metadata).
    pub(crate) fn emptied(&self) -> Self {
        Self {
            super_users: self.super_users.clone(),
            allow_everyone_if_no_acl_found: self.allow_everyone_if_no_acl_found,
            by_type: BTreeMap::new(),
            count: 0,
        }
    }

    /// Whether the principal is in `super.users`.
    pub(crate) fn is_super_user(&self, principal: &str) -> bool {
        self.super_users.contains(principal)
    }

    /// The `allow.everyone.if.no.acl.found` setting.
    pub(crate) fn allow_everyone_if_no_acl_found(&self) -> bool {
        self.allow_everyone_if_no_acl_found
    }

    /// The number of ACLs (Kafka's `aclCount`).
    pub(crate) fn acl_count(&self) -> usize {
        self.count
    }

    /// Adds an ACL; `false` if it was there already. The binding should have passed
    /// [`validate_new_acl`]; one whose pattern type is not LITERAL or PREFIXED is never stored
    /// (`false`).
    pub(crate) fn add(&mut self, binding: AclBinding) -> bool {
        if !matches!(binding.pattern_type, PatternType::Literal | PatternType::Prefixed) {
            return false;
        }
        let AclBinding {
            resource_type,
            resource_name,
            pattern_type,
            principal,
            host,
            operation,
            permission,
        } = binding;
        let entry = AccessControlEntry { principal, host, operation, permission };
        let type_acls = self.by_type.entry(resource_type).or_default();
        let Some(map) = type_acls.map_mut(pattern_type) else {
            return false;
        };
        let added = map.entry(resource_name).or_default().insert(entry);
        if added {
            self.count += 1;
        }
        added
    }

    /// Removes one ACL; `false` if it was not there.
    pub(crate) fn remove(&mut self, binding: &AclBinding) -> bool {
        let MapEntry::Occupied(mut type_entry) = self.by_type.entry(binding.resource_type) else {
            return false;
        };
        let Some(map) = type_entry.get_mut().map_mut(binding.pattern_type) else {
            return false;
        };
        let Some(set) = map.get_mut(binding.resource_name.as_str()) else {
            return false;
        };
        let entry = AccessControlEntry {
            principal: binding.principal.clone(),
            host: binding.host.clone(),
            operation: binding.operation,
            permission: binding.permission,
        };
        if !set.remove(&entry) {
            return false;
        }
        if set.is_empty() {
            map.remove(binding.resource_name.as_str());
        }
        if type_entry.get().is_empty() {
            type_entry.remove();
        }
        self.count -= 1;
        true
    }

    /// Removes every ACL the filter matches and returns them, sorted (Kafka's
    /// `AclControlManager.deleteAclsForFilter`). For a DeleteAcls request with several filters,
    /// Kafka matches every filter against the ACLs as they were before the request: call
    /// [`Authorizer::describe`] for each filter first, then [`Authorizer::remove`].
    pub(crate) fn remove_matching(&mut self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let matched = self.describe(filter);
        for binding in &matched {
            self.remove(binding);
        }
        matched
    }

    /// Every ACL: by resource type, LITERAL before PREFIXED, then by name and entry.
    pub(crate) fn acls(&self) -> impl Iterator<Item = AclBinding> + '_ {
        self.by_type.iter().flat_map(|(&resource_type, type_acls)| {
            [PatternType::Literal, PatternType::Prefixed].into_iter().flat_map(
                move |pattern_type| {
                    type_acls.map(pattern_type).into_iter().flatten().flat_map(
                        move |(name, set)| {
                            set.iter().map(move |entry| {
                                binding_of(resource_type, pattern_type, name, entry)
                            })
                        },
                    )
                },
            )
        })
    }

    /// The ACLs the filter matches, sorted (Kafka's `StandardAuthorizer.acls(filter)`, for
    /// DescribeAcls). Looks up the named resource when the filter names one.
    pub(crate) fn describe(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let mut found = Vec::new();
        let wants_literal = matches!(
            filter.pattern_type,
            PatternType::Any | PatternType::Match | PatternType::Literal
        );
        let wants_prefixed = matches!(
            filter.pattern_type,
            PatternType::Any | PatternType::Match | PatternType::Prefixed
        );
        for (&resource_type, type_acls) in &self.by_type {
            if filter.resource_type != ResourceType::Any && filter.resource_type != resource_type {
                continue;
            }
            let mut candidates: Vec<(PatternType, &str, &EntrySet)> = Vec::new();
            match filter.resource_name.as_deref() {
                None => {
                    if wants_literal {
                        candidates.extend(
                            type_acls
                                .literal
                                .iter()
                                .map(|(k, s)| (PatternType::Literal, k.as_str(), s)),
                        );
                    }
                    if wants_prefixed {
                        candidates.extend(
                            type_acls
                                .prefixed
                                .iter()
                                .map(|(k, s)| (PatternType::Prefixed, k.as_str(), s)),
                        );
                    }
                }
                Some(name) if filter.pattern_type == PatternType::Match => {
                    candidates.extend(type_acls.matching(name));
                }
                Some(name) => {
                    if wants_literal && let Some((k, s)) = type_acls.literal.get_key_value(name) {
                        candidates.push((PatternType::Literal, k.as_str(), s));
                    }
                    if wants_prefixed && let Some((k, s)) = type_acls.prefixed.get_key_value(name) {
                        candidates.push((PatternType::Prefixed, k.as_str(), s));
                    }
                }
            }
            for (pattern_type, name, set) in candidates {
                found.extend(
                    set.iter()
                        .map(|entry| binding_of(resource_type, pattern_type, name, entry))
                        .filter(|binding| filter.matches(binding)),
                );
            }
        }
        found.sort();
        found
    }

    /// Whether `principal` from `host` may perform `operation` on the resource (Kafka's
    /// `StandardAuthorizerData.authorize` on a LITERAL resource pattern):
    /// - super users may do everything;
    /// - the ACLs that apply are LITERAL on the name, LITERAL `*` and PREFIXED on a prefix of the
    ///   name; of those, the ones whose principal is `principal` or `User:*`, whose host is
    ///   `host` or `*`, and whose operation is `operation` or All (or, for ALLOW ACLs only,
    ///   implies it: Read, Write, Delete and Alter imply Describe, AlterConfigs implies
    ///   DescribeConfigs);
    /// - a DENY wins over any ALLOW; with an ALLOW and no DENY the answer is yes;
    /// - with neither, the answer is `allow.everyone.if.no.acl.found` if no ACL at all applies to
    ///   the resource (whatever its principal, host, operation and permission), and no
    ///   otherwise.
    pub(crate) fn authorize(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> bool {
        if self.is_super_user(principal) {
            return true;
        }
        let Some(type_acls) = self.by_type.get(&resource_type) else {
            return self.allow_everyone_if_no_acl_found;
        };
        let mut has_resource_acls = false;
        let mut allowed = false;
        for (_, _, set) in type_acls.matching(resource_name) {
            has_resource_acls = true;
            for entry in set {
                match entry.find_result(principal, host, operation) {
                    Some(AclPermissionType::Allow) => allowed = true,
                    Some(_) => return false,
                    None => {}
                }
            }
        }
        if allowed {
            true
        } else if has_resource_acls {
            false
        } else {
            self.allow_everyone_if_no_acl_found
        }
    }

    /// Whether `principal` from `host` may perform `operation` on at least one resource of the
    /// type (Kafka's default `Authorizer.authorizeByResourceType`, which `StandardAuthorizer`
    /// keeps): yes if an authorization on a resource named `hardcode` passes (super users, and
    /// `allow.everyone.if.no.acl.found` when no ACL applies to that name); otherwise yes if,
    /// among this type's ACLs for the principal (or `User:*`), the host (or `*`) and the
    /// operation (or All; implied operations do not count here), there is no DENY on the LITERAL
    /// `*`, and there is an ALLOW on the LITERAL `*`, or an ALLOW on a literal name without a
    /// DENY on that literal name or on a prefix of it, or an ALLOW on a prefix without a DENY on
    /// a prefix of that prefix. No for the ANY and UNKNOWN types and operations (Kafka throws).
    pub(crate) fn authorize_by_resource_type(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if matches!(resource_type, ResourceType::Any | ResourceType::Unknown)
            || matches!(operation, AclOperation::Any | AclOperation::Unknown)
        {
            return false;
        }
        if self.authorize(principal, host, operation, resource_type, "hardcode") {
            return true;
        }
        let Some(type_acls) = self.by_type.get(&resource_type) else {
            return false;
        };
        let mut deny_literal: HashSet<&str> = HashSet::new();
        let mut deny_prefixed: HashSet<&str> = HashSet::new();
        let mut allow_literal: Vec<&str> = Vec::new();
        let mut allow_prefixed: Vec<&str> = Vec::new();
        let mut has_wildcard_allow = false;
        let patterns = type_acls
            .literal
            .iter()
            .map(|(name, set)| (PatternType::Literal, name.as_str(), set))
            .chain(
                type_acls
                    .prefixed
                    .iter()
                    .map(|(name, set)| (PatternType::Prefixed, name.as_str(), set)),
            );
        for (pattern_type, name, set) in patterns {
            for entry in set {
                if entry.host != host && entry.host != WILDCARD_HOST {
                    continue;
                }
                if entry.principal != principal && entry.principal != WILDCARD_PRINCIPAL {
                    continue;
                }
                if entry.operation != operation && entry.operation != AclOperation::All {
                    continue;
                }
                match (entry.permission, pattern_type) {
                    (AclPermissionType::Deny, PatternType::Literal) => {
                        if name == WILDCARD_RESOURCE {
                            return false;
                        }
                        deny_literal.insert(name);
                    }
                    (AclPermissionType::Deny, _) => {
                        deny_prefixed.insert(name);
                    }
                    (AclPermissionType::Allow, PatternType::Literal) => {
                        if name == WILDCARD_RESOURCE {
                            has_wildcard_allow = true;
                        } else {
                            allow_literal.push(name);
                        }
                    }
                    (AclPermissionType::Allow, _) => allow_prefixed.push(name),
                    _ => {}
                }
            }
        }
        if has_wildcard_allow {
            return true;
        }
        // A deny on any non-empty prefix of the allowed name dominates it.
        let dominated = |allowed: &str| {
            allowed
                .char_indices()
                .map(|(i, c)| i + c.len_utf8())
                .any(|end| allowed.get(..end).is_some_and(|prefix| deny_prefixed.contains(prefix)))
        };
        allow_literal.iter().any(|name| !deny_literal.contains(name) && !dominated(name))
            || allow_prefixed.iter().any(|name| !dominated(name))
    }

    /// The authorized-operations bit field of a resource, as Metadata (topics), DescribeCluster
    /// and DescribeGroups return it (Kafka's `AuthHelper.authorizedOperations`): bit
    /// `1 << code` for each of the type's [`supported_operations`] that [`Authorizer::authorize`]
    /// allows.
    pub(crate) fn authorized_operations(
        &self,
        principal: &str,
        host: &str,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> i32 {
        supported_operations(resource_type)
            .iter()
            .filter(|&&op| self.authorize(principal, host, op, resource_type, resource_name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }
}

/// The binding of a stored entry.
fn binding_of(
    resource_type: ResourceType,
    pattern_type: PatternType,
    name: &str,
    entry: &AccessControlEntry,
) -> AclBinding {
    AclBinding {
        resource_type,
        resource_name: name.to_owned(),
        pattern_type,
        principal: entry.principal.clone(),
        host: entry.host.clone(),
        operation: entry.operation,
        permission: entry.permission,
    }
}

#[cfg(test)]
#[path = "acl_tests.rs"]
mod tests;
