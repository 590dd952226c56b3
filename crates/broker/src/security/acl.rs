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
        ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
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
mod tests {
    use super::AclOperation::{
        All, Alter, AlterConfigs, ClusterAction, Create, CreateTokens, Delete, Describe,
        DescribeConfigs, DescribeTokens, IdempotentWrite, Read, Write,
    };
    use super::AclPermissionType::{Allow, Deny};
    use super::PatternType::{Literal, Match, Prefixed};
    use super::ResourceType::{Cluster, Group, Topic, TransactionalId};
    use super::*;

    fn acl(
        resource_type: ResourceType,
        name: &str,
        pattern_type: PatternType,
        principal: &str,
        host: &str,
        operation: AclOperation,
        permission: AclPermissionType,
    ) -> AclBinding {
        AclBinding {
            resource_type,
            resource_name: name.to_owned(),
            pattern_type,
            principal: principal.to_owned(),
            host: host.to_owned(),
            operation,
            permission,
        }
    }

    /// `BaseAuthorizerTest`'s authorizer: `super.users=User:superuser1; User:superuser2`.
    fn base_authorizer() -> Authorizer {
        let supers =
            parse_super_users("User:superuser1; User:superuser2").expect("valid super.users");
        Authorizer::new(supers, false)
    }

    /// `StandardAuthorizerTest.createAndInitializeStandardAuthorizer`: `super.users=User:superman`.
    fn standard_authorizer(acls: &[AclBinding]) -> Authorizer {
        let mut authorizer = Authorizer::new(vec!["User:superman".to_owned()], false);
        for binding in acls {
            assert!(authorizer.add(binding.clone()), "{binding} added twice");
        }
        authorizer
    }

    fn add_all(authorizer: &mut Authorizer, acls: &[AclBinding]) {
        for binding in acls {
            validate_new_acl(binding).expect("test ACLs are valid");
            authorizer.add(binding.clone());
        }
    }

    /// Kafka's `AclBindingFilter(resourcePattern.toFilter, AccessControlEntryFilter.ANY)`.
    fn resource_filter(
        resource_type: ResourceType,
        name: &str,
        pattern_type: PatternType,
    ) -> AclBindingFilter {
        AclBindingFilter {
            resource_type,
            resource_name: Some(name.to_owned()),
            pattern_type,
            ..AclBindingFilter::ANY
        }
    }

    const LOCALHOST: &str = "127.0.0.1";

    #[test]
    fn wire_codes_and_names_are_kafkas() {
        // Codes checked against ResourceType.java, AclOperation.java, PatternType.java and
        // AclPermissionType.java.
        let resource_types: Vec<(i8, &str)> =
            ResourceType::VALUES.iter().map(|t| (t.code(), t.name())).collect();
        assert_eq!(
            resource_types,
            [
                (0, "Unknown"),
                (1, "Any"),
                (2, "Topic"),
                (3, "Group"),
                (4, "Cluster"),
                (5, "TransactionalId"),
                (6, "DelegationToken"),
                (7, "User"),
            ]
        );
        let operations: Vec<(i8, &str)> =
            AclOperation::VALUES.iter().map(|o| (o.code(), o.java_name())).collect();
        assert_eq!(
            operations,
            [
                (0, "UNKNOWN"),
                (1, "ANY"),
                (2, "ALL"),
                (3, "READ"),
                (4, "WRITE"),
                (5, "CREATE"),
                (6, "DELETE"),
                (7, "ALTER"),
                (8, "DESCRIBE"),
                (9, "CLUSTER_ACTION"),
                (10, "DESCRIBE_CONFIGS"),
                (11, "ALTER_CONFIGS"),
                (12, "IDEMPOTENT_WRITE"),
                (13, "CREATE_TOKENS"),
                (14, "DESCRIBE_TOKENS"),
            ]
        );
        let patterns: Vec<(i8, String)> =
            PatternType::VALUES.iter().map(|p| (p.code(), p.to_string())).collect();
        assert_eq!(
            patterns,
            [
                (0, "Unknown".to_owned()),
                (1, "Any".to_owned()),
                (2, "Match".to_owned()),
                (3, "Literal".to_owned()),
                (4, "Prefixed".to_owned()),
            ]
        );
        let permissions: Vec<(i8, &str)> =
            AclPermissionType::VALUES.iter().map(|p| (p.code(), p.name())).collect();
        assert_eq!(permissions, [(0, "Unknown"), (1, "Any"), (2, "Deny"), (3, "Allow")]);
        for code in -128..=127_i8 {
            assert_eq!(
                ResourceType::from_code(code).map(ResourceType::code),
                (0..=7).contains(&code).then_some(code)
            );
            assert_eq!(
                AclOperation::from_code(code).map(AclOperation::code),
                (0..=14).contains(&code).then_some(code)
            );
            assert_eq!(
                PatternType::from_code(code).map(PatternType::code),
                (0..=4).contains(&code).then_some(code)
            );
            assert_eq!(
                AclPermissionType::from_code(code).map(AclPermissionType::code),
                (0..=3).contains(&code).then_some(code)
            );
        }
    }

    #[test]
    fn names_parse_kafka_acls_style() {
        assert_eq!("topic".parse::<ResourceType>(), Ok(Topic));
        assert_eq!("TransactionalId".parse::<ResourceType>(), Ok(TransactionalId));
        assert_eq!("transactional-id".parse::<ResourceType>(), Ok(TransactionalId));
        assert_eq!("read".parse::<AclOperation>(), Ok(Read));
        assert_eq!("DESCRIBE_CONFIGS".parse::<AclOperation>(), Ok(DescribeConfigs));
        assert_eq!("describeconfigs".parse::<AclOperation>(), Ok(DescribeConfigs));
        assert_eq!("IdempotentWrite".parse::<AclOperation>(), Ok(IdempotentWrite));
        assert_eq!("prefixed".parse::<PatternType>(), Ok(Prefixed));
        assert_eq!("MATCH".parse::<PatternType>(), Ok(Match));
        assert_eq!("allow".parse::<AclPermissionType>(), Ok(Allow));
        assert_eq!(" Deny ".parse::<AclPermissionType>(), Ok(Deny));
        assert_eq!(
            "frobnicate".parse::<AclOperation>(),
            Err(AclError::UnknownName { kind: "operation", name: "frobnicate".to_owned() })
        );
        assert_eq!(
            "unknown".parse::<PatternType>().map_err(|e| e.to_string()),
            Err("unknown pattern type `unknown`".to_owned())
        );
    }

    #[test]
    fn binding_display_is_kafkas_to_string() {
        let binding = acl(Topic, "foo", Literal, "User:alice", "*", Read, Allow);
        assert_eq!(
            binding.to_string(),
            "(pattern=ResourcePattern(resourceType=TOPIC, name=foo, patternType=LITERAL), \
             entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW))"
        );
        assert_eq!(
            AclBindingFilter::ANY.to_string(),
            "(patternFilter=ResourcePattern(resourceType=ANY, name=<any>, patternType=ANY), \
             entryFilter=(principal=<any>, host=<any>, operation=ANY, permissionType=ANY))"
        );
    }

    // ResourcePatternFilterTest: shouldBeUnknownIfResourceTypeUnknown,
    // shouldBeUnknownIfPatternTypeUnknown, shouldNotMatchIfDifferentResourceType,
    // shouldNotMatchIfDifferentName, shouldNotMatchIfDifferentNameCase,
    // shouldNotMatchIfDifferentPatternType, shouldMatchWhereResourceTypeIsAny,
    // shouldMatchWhereResourceNameIsAny, shouldMatchWherePatternTypeIsAny,
    // shouldMatchWherePatternTypeIsMatch, shouldMatchLiteralIfExactMatch,
    // shouldMatchLiteralIfNameMatchesAndFilterIsOnPatternTypeAny,
    // shouldMatchLiteralIfNameMatchesAndFilterIsOnPatternTypeMatch,
    // shouldNotMatchLiteralIfNamesDiffer, shouldMatchLiteralWildcardIfExactMatch,
    // shouldNotMatchLiteralWildcardAgainstOtherName,
    // shouldNotMatchLiteralWildcardTheWayAround, shouldNotMatchLiteralWildcardIfFilterHasPatternTypeOfAny,
    // shouldMatchLiteralWildcardIfFilterHasPatternTypeOfMatch, shouldMatchPrefixedIfExactMatch,
    // shouldNotMatchIfBothPrefixedAndFilterIsPrefixOfResource,
    // shouldNotMatchIfBothPrefixedAndResourceIsPrefixOfFilter,
    // shouldNotMatchPrefixedIfNamePrefixedAnyFilterTypeIsAny,
    // shouldMatchPrefixedIfNamePrefixedAnyFilterTypeIsMatch.
    #[test]
    fn resource_pattern_filter_matches_as_kafka() {
        let filter = |rt, name: Option<&str>, pt| AclBindingFilter {
            resource_type: rt,
            resource_name: name.map(str::to_owned),
            pattern_type: pt,
            ..AclBindingFilter::ANY
        };
        let pattern = |rt, name: &str, pt| acl(rt, name, pt, "User:a", "*", Read, Allow);
        let cases: &[(AclBindingFilter, AclBinding, bool)] = &[
            (filter(Topic, Some("Name"), Literal), pattern(Group, "Name", Literal), false),
            (filter(Topic, Some("Name"), Literal), pattern(Topic, "Different", Literal), false),
            (filter(Topic, Some("Name"), Literal), pattern(Topic, "NAME", Literal), false),
            (filter(Topic, Some("Name"), Literal), pattern(Topic, "Name", Prefixed), false),
            (
                filter(ResourceType::Any, Some("Name"), Literal),
                pattern(Topic, "Name", Literal),
                true,
            ),
            (filter(Topic, None, Literal), pattern(Topic, "Name", Literal), true),
            (filter(Topic, Some("Name"), PatternType::Any), pattern(Topic, "Name", Prefixed), true),
            (filter(Topic, Some("Name"), Match), pattern(Topic, "Name", Prefixed), true),
            (filter(Topic, Some("Name"), Literal), pattern(Topic, "Name", Literal), true),
            (filter(Topic, Some("Name"), PatternType::Any), pattern(Topic, "Name", Literal), true),
            (filter(Topic, Some("Name"), Match), pattern(Topic, "Name", Literal), true),
            (filter(Topic, Some("Name"), Match), pattern(Topic, "Different", Literal), false),
            (filter(Topic, Some("*"), Literal), pattern(Topic, "*", Literal), true),
            (filter(Topic, Some("Name"), Literal), pattern(Topic, "*", Literal), false),
            (filter(Topic, Some("*"), Literal), pattern(Topic, "Name", Literal), false),
            (filter(Topic, Some("Name"), PatternType::Any), pattern(Topic, "*", Literal), false),
            (filter(Topic, Some("Name"), Match), pattern(Topic, "*", Literal), true),
            (filter(Topic, Some("Name"), Prefixed), pattern(Topic, "Name", Prefixed), true),
            (filter(Topic, Some("Na"), Prefixed), pattern(Topic, "Name", Prefixed), false),
            (filter(Topic, Some("Name"), Prefixed), pattern(Topic, "Na", Prefixed), false),
            (filter(Topic, Some("Name"), PatternType::Any), pattern(Topic, "Na", Prefixed), false),
            (filter(Topic, Some("Name"), Match), pattern(Topic, "Na", Prefixed), true),
            (filter(Topic, Some("Na"), Match), pattern(Topic, "Name", Prefixed), false),
            (
                filter(ResourceType::Unknown, None, PatternType::Any),
                pattern(Topic, "Name", Literal),
                false,
            ),
        ];
        for (filter, binding, expected) in cases {
            assert_eq!(filter.matches(binding), *expected, "{filter} against {binding}");
        }
    }

    // AclBindingTest.testMatching / testUnknowns / testMatchesAtMostOne.
    #[test]
    fn entry_filter_and_indefinite_fields() {
        let binding = acl(Topic, "mytopic", Literal, "User:ANONYMOUS", "", All, Allow);
        assert!(binding.to_filter().matches(&binding));
        assert_eq!(binding.to_filter().find_indefinite_field(), None);
        let entry_filter =
            |principal: Option<&str>, host: Option<&str>, op, perm| AclBindingFilter {
                principal: principal.map(str::to_owned),
                host: host.map(str::to_owned),
                operation: op,
                permission: perm,
                ..AclBindingFilter::ANY
            };
        assert!(
            entry_filter(Some("User:ANONYMOUS"), None, AclOperation::Any, AclPermissionType::Any)
                .matches(&binding)
        );
        assert!(
            !entry_filter(Some("User:bob"), None, AclOperation::Any, AclPermissionType::Any)
                .matches(&binding)
        );
        assert!(
            !entry_filter(None, Some("host1"), AclOperation::Any, AclPermissionType::Any)
                .matches(&binding)
        );
        assert!(!entry_filter(None, None, Read, AclPermissionType::Any).matches(&binding));
        assert!(!entry_filter(None, None, AclOperation::Any, Deny).matches(&binding));
        assert_eq!(AclBindingFilter::ANY.find_indefinite_field(), Some("Resource type is ANY."));
        let mut filter = binding.to_filter();
        filter.resource_name = None;
        assert_eq!(filter.find_indefinite_field(), Some("Resource name is NULL."));
        let mut filter = binding.to_filter();
        filter.pattern_type = Match;
        assert_eq!(filter.find_indefinite_field(), Some("Resource pattern type is MATCH."));
        let mut filter = binding.to_filter();
        filter.host = None;
        assert_eq!(filter.find_indefinite_field(), Some("Host is NULL"));
        let mut filter = binding.to_filter();
        filter.permission = AclPermissionType::Any;
        assert_eq!(filter.find_indefinite_field(), Some("Permission type is ANY"));
        let mut filter = binding.to_filter();
        filter.operation = AclOperation::Unknown;
        assert!(filter.is_unknown());
        assert_eq!(validate_filter(&filter), Err(AclError::UnknownEntryFilter));
        let mut filter = AclBindingFilter::ANY;
        filter.pattern_type = PatternType::Unknown;
        assert_eq!(
            validate_filter(&filter).map_err(|e| e.to_string()),
            Err("Unknown patternFilter.".to_owned())
        );
        assert_eq!(validate_filter(&AclBindingFilter::ANY), Ok(()));
    }

    // AclControlManagerTest.testValidateNewAcl and AuthorizerTest.testEmptyAclThrowsException, plus
    // the broker's CLUSTER name check and seglog's delegation token refusal.
    #[test]
    fn validate_new_acl_keeps_kafkas_messages() {
        let ok = acl(Topic, "foo", Literal, "User:alice", "*", Read, Allow);
        assert_eq!(validate_new_acl(&ok), Ok(()));
        assert_eq!(
            validate_new_acl(&acl(Topic, "foo", Prefixed, "User:*", "1.2.3.4", All, Deny)),
            Ok(())
        );
        assert_eq!(
            validate_new_acl(&acl(Cluster, CLUSTER_NAME, Literal, "User:a", "*", Alter, Allow)),
            Ok(())
        );
        let refused = |binding: AclBinding| validate_new_acl(&binding).map_err(|e| e.to_string());
        let cases: Vec<(AclBinding, &str)> = vec![
            (
                AclBinding { resource_type: ResourceType::Any, ..ok.clone() },
                "Invalid resourceType ANY",
            ),
            (
                AclBinding { resource_type: ResourceType::Unknown, ..ok.clone() },
                "Invalid resourceType UNKNOWN",
            ),
            (AclBinding { pattern_type: Match, ..ok.clone() }, "Invalid patternType MATCH"),
            (
                AclBinding { pattern_type: PatternType::Any, ..ok.clone() },
                "Invalid patternType ANY",
            ),
            (AclBinding { operation: AclOperation::Any, ..ok.clone() }, "Invalid operation ANY"),
            (
                AclBinding { operation: AclOperation::Unknown, ..ok.clone() },
                "Invalid operation UNKNOWN",
            ),
            (
                AclBinding { permission: AclPermissionType::Any, ..ok.clone() },
                "Invalid permissionType ANY",
            ),
            (
                AclBinding { permission: AclPermissionType::Unknown, ..ok.clone() },
                "Invalid permissionType UNKNOWN",
            ),
            (
                AclBinding { resource_type: Group, resource_name: String::new(), ..ok.clone() },
                "Invalid empty resource name",
            ),
            (
                AclBinding {
                    resource_type: Cluster,
                    resource_name: "other".to_owned(),
                    ..ok.clone()
                },
                "The only valid name for the CLUSTER resource is kafka-cluster",
            ),
            (
                AclBinding {
                    resource_type: Cluster,
                    resource_name: CLUSTER_NAME.to_owned(),
                    pattern_type: Prefixed,
                    ..ok.clone()
                },
                "",
            ),
            (
                AclBinding { principal: "alice".to_owned(), ..ok.clone() },
                "expected a string in format principalType:principalName but got alice",
            ),
            (
                AclBinding { resource_type: ResourceType::DelegationToken, ..ok.clone() },
                "seglog has no delegation tokens",
            ),
        ];
        for (binding, message) in cases {
            let expected = if message.is_empty() { Ok(()) } else { Err(message.to_owned()) };
            assert_eq!(refused(binding.clone()), expected, "{binding}");
        }
    }

    // StandardAuthorizerTest.testGetConfiguredSuperUsers.
    #[test]
    fn super_users_parse_as_kafka() {
        assert_eq!(parse_super_users(""), Ok(vec![]));
        assert_eq!(parse_super_users(" "), Ok(vec![]));
        assert_eq!(
            parse_super_users("User:bob;User:alice "),
            Ok(vec!["User:bob".to_owned(), "User:alice".to_owned()])
        );
        assert_eq!(
            parse_super_users(";  User:bob  ;  User:alice "),
            Ok(vec!["User:bob".to_owned(), "User:alice".to_owned()])
        );
        assert_eq!(
            parse_super_users("bob;:alice").map_err(|e| e.to_string()),
            Err("expected a string in format principalType:principalName but got bob".to_owned())
        );
    }

    // AuthorizerTest.testTopicAcl.
    #[test]
    fn test_topic_acl() {
        let resource = "foo-c0ffee";
        let (user1, user2, user3) = ("User:alice", "User:rob", "User:batman");
        let (host1, host2) = ("192.168.1.1", "192.168.1.2");
        let mut authorizer = base_authorizer();
        add_all(
            &mut authorizer,
            &[
                acl(Topic, resource, Literal, user1, host1, Read, Allow),
                acl(Topic, resource, Literal, user1, host2, Read, Allow),
                acl(Topic, resource, Literal, user1, host1, Read, Deny),
                acl(Topic, resource, Literal, user1, host1, Write, Allow),
                acl(Topic, resource, Literal, user1, "*", Describe, Allow),
                acl(Topic, resource, Literal, user2, "*", Read, Allow),
                acl(Topic, resource, Literal, user3, "*", Write, Allow),
            ],
        );
        let can = |principal, host, op| authorizer.authorize(principal, host, op, Topic, resource);
        assert!(can(user1, host2, Read), "User1 should have READ access from host2");
        assert!(
            !can(user1, host1, Read),
            "User1 should not have READ access from host1 due to denyAcl"
        );
        assert!(can(user1, host1, Write), "User1 should have WRITE access from host1");
        assert!(!can(user1, host2, Write), "User1 should not have WRITE access from host2");
        assert!(can(user1, host1, Describe), "User1 should have DESCRIBE access from host1");
        assert!(can(user1, host2, Describe), "User1 should have DESCRIBE access from host2");
        assert!(!can(user1, host1, Alter), "User1 should not have edit access from host1");
        assert!(!can(user1, host2, Alter), "User1 should not have edit access from host2");
        assert!(can(user2, host1, Describe), "User2 should have DESCRIBE access from host1");
        assert!(can(user3, host1, Describe), "User3 should have DESCRIBE access from host1");
        assert!(can(user2, host1, Read), "User2 should have READ access from host1");
        assert!(can(user3, host1, Write), "User3 should have WRITE access from host1");
    }

    // AuthorizerTest.testDenyTakesPrecedence, testAllowAllAccess, testSuperUserHasAccess,
    // testAuthorizeWithEmptyResourceName, testNoAclFound, testNoAclFoundOverride.
    #[test]
    fn test_deny_allow_all_super_user_and_no_acl_found() {
        let resource = "foo-1";
        let mut authorizer = base_authorizer();
        assert!(
            !authorizer.authorize("User:alice", "192.168.0.1", Read, Topic, resource),
            "testNoAclFound"
        );
        assert!(
            !authorizer.authorize("User:alice", "192.168.0.1", Read, Group, ""),
            "empty resource name"
        );
        add_all(&mut authorizer, &[acl(Group, "*", Literal, "User:*", "*", Read, Allow)]);
        assert!(
            authorizer.authorize("User:alice", "192.168.0.1", Read, Group, ""),
            "wildcard covers the empty name"
        );

        add_all(
            &mut authorizer,
            &[
                acl(Topic, resource, Literal, "User:*", "*", All, Allow),
                acl(Topic, resource, Literal, "User:alice", "192.168.2.1", All, Deny),
            ],
        );
        assert!(
            !authorizer.authorize("User:alice", "192.168.2.1", Read, Topic, resource),
            "deny takes precedence"
        );
        assert!(
            authorizer.authorize("User:random", "192.0.4.4", Read, Topic, resource),
            "allow all"
        );

        let mut authorizer = base_authorizer();
        add_all(&mut authorizer, &[acl(Topic, resource, Literal, "User:*", "*", All, Deny)]);
        assert!(authorizer.authorize("User:superuser1", "192.0.4.4", Read, Topic, resource));
        assert!(authorizer.authorize("User:superuser2", "192.0.4.4", Read, Topic, resource));
        assert!(!authorizer.authorize("User:superuser3", "192.0.4.4", Read, Topic, resource));

        let open = Authorizer::new(vec![], true);
        assert!(
            open.authorize("User:alice", "192.168.0.1", Read, Topic, resource),
            "testNoAclFoundOverride"
        );
    }

    // StandardAuthorizerTest.testAllowEveryoneIfNoAclFoundConfigEnabled / Disabled: an ACL for
    // another principal on the resource is enough for "ACL found".
    #[test]
    fn test_allow_everyone_if_no_acl_found() {
        for (allow_everyone, topic2) in [(true, true), (false, false)] {
            let mut authorizer = Authorizer::new(
                vec!["User:alice".to_owned(), "User:chris".to_owned()],
                allow_everyone,
            );
            authorizer.add(acl(Topic, "topic1", Literal, "User:Alice", "*", Read, Allow));
            assert!(!authorizer.authorize("User:Bob", LOCALHOST, Read, Topic, "topic1"));
            assert_eq!(authorizer.authorize("User:Bob", LOCALHOST, Read, Topic, "topic2"), topic2);
            // A prefixed or wildcard ACL of someone else also counts as found.
            authorizer.add(acl(Topic, "top", Prefixed, "User:Alice", "*", Write, Allow));
            assert!(!authorizer.authorize("User:Bob", LOCALHOST, Read, Topic, "topic2"));
            assert_eq!(
                authorizer.authorize("User:Bob", LOCALHOST, Read, Topic, "other"),
                allow_everyone
            );
            authorizer.add(acl(Topic, "*", Literal, "User:Alice", "10.0.0.1", Write, Deny));
            assert!(!authorizer.authorize("User:Bob", LOCALHOST, Read, Topic, "other"));
            assert_eq!(
                authorizer.authorize("User:Bob", LOCALHOST, Read, Group, "other"),
                allow_everyone
            );
        }
    }

    // AuthorizerTest.testWildCardAcls, testAccessAllowedIfAllowAclExistsOnWildcardResource.
    #[test]
    fn test_wildcard_acls() {
        let (user1, host1, resource) = ("User:alice", "192.168.3.1", "foo-2");
        let mut authorizer = base_authorizer();
        assert!(!authorizer.authorize(user1, host1, Read, Topic, resource), "fail closed");
        add_all(&mut authorizer, &[acl(Topic, "*", Literal, user1, host1, Read, Allow)]);
        assert!(
            authorizer.authorize(user1, host1, Read, Topic, resource),
            "READ through the wildcard"
        );
        add_all(&mut authorizer, &[acl(Topic, resource, Literal, user1, host1, Write, Allow)]);
        assert!(authorizer.authorize(user1, host1, Write, Topic, resource));
        add_all(&mut authorizer, &[acl(Topic, "*", Literal, user1, host1, Write, Deny)]);
        assert!(!authorizer.authorize(user1, host1, Write, Topic, resource), "wildcard DENY wins");
        assert!(authorizer.authorize(user1, host1, Read, Topic, "*"), "the name `*` itself");
    }

    // AuthorizerTest.testAclInheritance (testImplicationsOfAllow / testImplicationsOfDeny) and
    // StandardAuthorizerTest.testFindResultImplication.
    #[test]
    fn test_acl_inheritance() {
        let valid_ops: Vec<AclOperation> = AclOperation::VALUES
            .iter()
            .copied()
            .filter(|op| !matches!(op, AclOperation::Any | AclOperation::Unknown))
            .collect();
        let all_ops: Vec<AclOperation> =
            valid_ops.iter().copied().filter(|op| *op != All).collect();
        let (user, host) = ("User:alice", "192.168.3.1");
        let allow_cases: &[(AclOperation, &[AclOperation])] = &[
            (All, &all_ops),
            (Read, &[Describe]),
            (Write, &[Describe]),
            (Delete, &[Describe]),
            (Alter, &[Describe]),
            (AlterConfigs, &[DescribeConfigs]),
            (Create, &[]),
            (Describe, &[]),
        ];
        for (parent, implied) in allow_cases {
            let mut authorizer = base_authorizer();
            add_all(
                &mut authorizer,
                &[acl(Cluster, CLUSTER_NAME, Literal, user, "*", *parent, Allow)],
            );
            for op in &valid_ops {
                let expected = implied.contains(op) || op == parent;
                assert_eq!(
                    authorizer.authorize(user, host, *op, Cluster, CLUSTER_NAME),
                    expected,
                    "ALLOW {parent} and {op}"
                );
            }
        }
        let deny_cases: &[(AclOperation, &[AclOperation])] =
            &[(All, &all_ops), (Describe, &[]), (DescribeConfigs, &[]), (Read, &[])];
        for (parent, implied) in deny_cases {
            let mut authorizer = base_authorizer();
            add_all(
                &mut authorizer,
                &[
                    acl(Cluster, CLUSTER_NAME, Literal, user, "*", *parent, Deny),
                    acl(Cluster, CLUSTER_NAME, Literal, user, "*", All, Allow),
                ],
            );
            for op in &valid_ops {
                let denied = implied.contains(op) || op == parent;
                assert_eq!(
                    authorizer.authorize(user, host, *op, Cluster, CLUSTER_NAME),
                    !denied,
                    "DENY {parent} and {op}"
                );
            }
        }
    }

    // StandardAuthorizerTest.testFindResultPrincipalMatching.
    #[test]
    fn test_find_result_principal_matching() {
        let foo = AccessControlEntry {
            principal: "User:bob".to_owned(),
            host: "*".to_owned(),
            operation: Read,
            permission: Allow,
        };
        assert_eq!(foo.find_result("User:bob", LOCALHOST, Read), Some(Allow));
        assert_eq!(foo.find_result("User:alice", LOCALHOST, Read), None);
        let bar = AccessControlEntry {
            principal: "User:*".to_owned(),
            host: "*".to_owned(),
            operation: Read,
            permission: Deny,
        };
        assert_eq!(bar.find_result("User:alice", LOCALHOST, Read), Some(Deny));
        assert_eq!(bar.find_result("Group:admins", LOCALHOST, Read), Some(Deny));
        for op in [Read, Write, Delete, Alter] {
            let deny = AccessControlEntry { operation: op, ..bar.clone() };
            assert_eq!(
                deny.find_result("User:alice", LOCALHOST, Describe),
                None,
                "deny {op} does not imply"
            );
        }
        let create = AccessControlEntry { operation: Create, permission: Allow, ..bar.clone() };
        assert_eq!(
            create.find_result("User:alice", LOCALHOST, Describe),
            None,
            "CREATE does not imply DESCRIBE"
        );
    }

    // StandardAuthorizerTest.testListAcls and testSimpleAuthorizations.
    #[test]
    fn test_list_acls_and_simple_authorizations() {
        let foo = |op, perm| acl(Topic, "foo_", Prefixed, "User:bob", "*", op, perm);
        let bar = |op, perm| acl(Group, "bar", Literal, "User:*", "*", op, perm);
        let mut authorizer = standard_authorizer(&[
            foo(Read, Allow),
            foo(Write, Allow),
            bar(DescribeConfigs, Deny),
            bar(AlterConfigs, Deny),
        ]);
        assert_eq!(authorizer.acl_count(), 4);
        let listed: Vec<AclBinding> = authorizer.acls().collect();
        assert_eq!(
            listed,
            [
                foo(Read, Allow),
                foo(Write, Allow),
                bar(DescribeConfigs, Deny),
                bar(AlterConfigs, Deny)
            ]
        );
        assert!(authorizer.remove(&foo(Write, Allow)));
        assert!(!authorizer.remove(&foo(Write, Allow)));
        assert_eq!(authorizer.acls().count(), 3);
        let topics = AclBindingFilter { resource_type: Topic, ..AclBindingFilter::ANY };
        assert_eq!(authorizer.describe(&topics), [foo(Read, Allow)]);

        let authorizer = standard_authorizer(&[
            foo(Read, Allow),
            foo(Write, Allow),
            bar(DescribeConfigs, Allow),
            bar(AlterConfigs, Allow),
        ]);
        assert!(authorizer.authorize("User:bob", LOCALHOST, Read, Topic, "foo_"));
        assert!(authorizer.authorize("User:fred", LOCALHOST, AlterConfigs, Group, "bar"));
        assert!(!authorizer.authorize("User:fred", LOCALHOST, Read, Topic, "foo_"));
    }

    // StandardAuthorizerTest.testDenyPrecedenceWithOperationAll.
    #[test]
    fn test_deny_precedence_with_operation_all() {
        let authorizer = standard_authorizer(&[
            acl(Topic, "foo", Literal, "User:alice", "*", All, Deny),
            acl(Topic, "foo", Prefixed, "User:alice", "*", Read, Allow),
            acl(Topic, "foo", Literal, "User:*", "*", All, Deny),
            acl(Topic, "foo", Prefixed, "User:*", "*", Describe, Allow),
        ]);
        let check = |principal, actions: &[(AclOperation, &str)]| -> Vec<bool> {
            actions
                .iter()
                .map(|(op, name)| authorizer.authorize(principal, LOCALHOST, *op, Topic, name))
                .collect()
        };
        assert_eq!(
            check(
                "User:alice",
                &[(Write, "foo"), (Read, "foo"), (Describe, "foo"), (Read, "foobar")]
            ),
            [false, false, false, true]
        );
        assert_eq!(
            check(
                "User:bob",
                &[
                    (Describe, "foo"),
                    (Read, "foo"),
                    (Write, "foo"),
                    (Describe, "foobaz"),
                    (Read, "foobaz")
                ]
            ),
            [false, false, false, true, false]
        );
    }

    // StandardAuthorizerTest.testTopicAclWithOperationAll.
    #[test]
    fn test_topic_acl_with_operation_all() {
        let authorizer = standard_authorizer(&[
            acl(Topic, "foo", Literal, "User:*", "*", All, Allow),
            acl(Topic, "bar", Prefixed, "User:alice", "*", All, Allow),
            acl(Topic, "baz", Literal, "User:bob", "*", All, Allow),
        ]);
        let check = |principal, actions: &[(AclOperation, &str)]| -> Vec<bool> {
            actions
                .iter()
                .map(|(op, name)| authorizer.authorize(principal, LOCALHOST, *op, Topic, name))
                .collect()
        };
        assert_eq!(
            check("User:alice", &[(Write, "foo"), (DescribeConfigs, "bar"), (Describe, "baz")]),
            [true, true, false]
        );
        assert_eq!(
            check("User:bob", &[(Write, "foo"), (Read, "bar"), (Describe, "baz")]),
            [true, false, true]
        );
        assert_eq!(
            check("User:malory", &[(Describe, "foo"), (Write, "bar"), (Read, "baz")]),
            [true, false, false]
        );
    }

    // StandardAuthorizerTest.testHostAddressAclValidation.
    #[test]
    fn test_host_address_acl_validation() {
        let (host1, host2, local) = ("192.168.1.1", "192.168.1.2", "10.1.2.3");
        let authorizer = standard_authorizer(&[
            acl(Topic, "foo", Literal, "User:alice", host1, Read, Deny),
            acl(Topic, "foo", Literal, "User:alice", "*", Read, Allow),
            acl(Topic, "bar", Literal, "User:bob", host2, Read, Allow),
            acl(Topic, "bar", Literal, "User:*", local, Describe, Allow),
        ]);
        let actions = [(Read, "foo"), (Read, "bar"), (Describe, "bar")];
        let check = |principal, host| -> Vec<bool> {
            actions
                .iter()
                .map(|(op, name)| authorizer.authorize(principal, host, *op, Topic, name))
                .collect()
        };
        assert_eq!(check("User:alice", local), [true, false, true]);
        assert_eq!(check("User:alice", host1), [false, false, false]);
        assert_eq!(check("User:alice", host2), [true, false, false]);
        assert_eq!(check("User:bob", local), [false, false, true]);
        assert_eq!(check("User:bob", host1), [false, false, false]);
        assert_eq!(check("User:bob", host2), [false, true, true]);
    }

    // StandardAuthorizerTest.testAuthorizationWithManyAcls.
    #[test]
    fn test_authorization_with_many_acls() {
        let authorizer = standard_authorizer(&[
            acl(Topic, "green2", Literal, "User:*", "*", Read, Allow),
            acl(Topic, "green", Prefixed, "User:bob", "*", Read, Allow),
            acl(Topic, "betamax4", Literal, "User:bob", "*", Read, Allow),
            acl(Topic, "betamax", Literal, "User:bob", "*", Read, Allow),
            acl(Topic, "beta", Prefixed, "User:*", "*", Read, Allow),
            acl(Topic, "alpha", Prefixed, "User:*", "*", Read, Allow),
            acl(Topic, "alp", Prefixed, "User:bob", "*", Read, Deny),
            acl(Group, "*", Literal, "User:bob", "*", Write, Allow),
            acl(Group, "wheel", Literal, "User:*", "*", Write, Deny),
        ]);
        let bob = |op, rt, name| authorizer.authorize("User:bob", LOCALHOST, op, rt, name);
        assert!(bob(Read, Topic, "green1"));
        assert!(!bob(Write, Group, "wheel"));
        assert!(!bob(Read, Topic, "alpha"));
        assert!(bob(Write, Group, "arbitrary"));
        assert!(!bob(Read, Topic, "ala"));
        assert!(bob(Read, Topic, "betamax4"));
        assert!(bob(Read, Topic, "betamax42"), "through the `beta` prefix");
    }

    // StandardAuthorizerTest.testPrefixAcls, AuthorizerTest.testAccessAllowedIfAllowAclExistsOnPrefixedResource,
    // testAuthorizeWithPrefixedResource and testSingleCharacterResourceAcls.
    #[test]
    fn test_prefix_acls() {
        let authorizer = standard_authorizer(&[
            acl(Topic, "fooa", Prefixed, "User:alice", "*", All, Allow),
            acl(Topic, "foobar", Literal, "User:bob", "*", All, Allow),
            acl(Topic, "f", Prefixed, "User:bob", "*", All, Allow),
        ]);
        let check = |principal, actions: &[(AclOperation, &str)]| -> Vec<bool> {
            actions
                .iter()
                .map(|(op, name)| authorizer.authorize(principal, LOCALHOST, *op, Topic, name))
                .collect()
        };
        assert_eq!(
            check("User:bob", &[(Write, "foobarr"), (Read, "goobar"), (Read, "fooa")]),
            [true, false, true]
        );
        assert_eq!(
            check("User:alice", &[(Describe, "fooa"), (Write, "bar"), (Read, "baz")]),
            [true, false, false]
        );

        let deny_read = |name: &str, pt| acl(Topic, name, pt, "User:*", "*", Read, Deny);
        let mut authorizer = base_authorizer();
        add_all(
            &mut authorizer,
            &[
                deny_read("a_other", Literal),
                deny_read("a_other", Prefixed),
                deny_read("foo-5e3c6b2a", Prefixed),
                deny_read("foo-7a9d", Prefixed),
                deny_read("foo-1b2c-zzz", Prefixed),
                deny_read("fooo-4f00", Prefixed),
                deny_read("fo-9e1a", Prefixed),
                deny_read("fop-33aa", Prefixed),
                deny_read("fon-2b1c", Prefixed),
                deny_read("fon-", Prefixed),
                deny_read("z_other", Prefixed),
                deny_read("z_other", Literal),
                acl(Topic, "foo", Prefixed, "User:*", "*", Read, Allow),
            ],
        );
        assert!(authorizer.authorize("User:alice", "192.168.0.1", Read, Topic, "foo-0d1e2f"));
        assert!(!authorizer.authorize("User:alice", "192.168.0.1", Read, Topic, "foo-7a9d-x"));

        let mut authorizer = base_authorizer();
        let allow_read = |name: &str, pt| acl(Topic, name, pt, "User:*", "*", Read, Allow);
        add_all(&mut authorizer, &[allow_read("f", Literal)]);
        let read = |authorizer: &Authorizer, name| {
            authorizer.authorize("User:alice", "192.168.0.1", Read, Topic, name)
        };
        assert!(read(&authorizer, "f"));
        assert!(!read(&authorizer, "foo"));
        add_all(&mut authorizer, &[allow_read("_", Prefixed)]);
        assert!(read(&authorizer, "_foo"));
        assert!(read(&authorizer, "_"));
        assert!(!read(&authorizer, "foo_"));
    }

    /// The prefix walk finds every prefix among many neighbours, multi-byte names included.
    #[test]
    fn prefix_walk_finds_exactly_the_prefixes() {
        let keys = [
            "", "a", "ab", "abc", "abd", "abcd", "abce", "ac", "b", "\u{e4}", "\u{e4}b",
            "\u{e4}bc", "ab\u{e4}", "zz",
        ];
        let mut map: BTreeMap<String, EntrySet> = BTreeMap::new();
        let entry = AccessControlEntry {
            principal: "User:*".to_owned(),
            host: "*".to_owned(),
            operation: Read,
            permission: Allow,
        };
        for key in keys {
            map.entry(key.to_owned()).or_default().insert(entry.clone());
        }
        for name in
            ["abcde", "abd", "ab", "abz", "b", "c", "\u{e4}bcx", "ab\u{e4}x", "", "zzz", "aa"]
        {
            let mut found: Vec<&str> = PrefixMatches::new(&map, name).map(|(key, _)| key).collect();
            found.sort_unstable();
            let mut expected: Vec<&str> =
                keys.iter().copied().filter(|key| name.starts_with(key)).collect();
            expected.sort_unstable();
            assert_eq!(found, expected, "prefixes of {name:?}");
        }
    }

    // AuthorizerTest.testAclManagementAPIs, testGetAclsPrincipal, testAddAclsOn*Resource,
    // testDeleteAclOn*Resource, testDeleteAll*, and StandardAuthorizerTest.testListAcls: add is
    // idempotent, filters find by principal and resource, removal by filter.
    #[test]
    fn test_acl_management() {
        let resource = "foo-3";
        let (user1, user2) = ("User:alice", "User:bob");
        let acl1 = acl(Topic, resource, Literal, user1, "host1", Read, Allow);
        let acl2 = acl(Topic, resource, Literal, user1, "host1", Write, Allow);
        let acl3 = acl(Topic, resource, Literal, user2, "host2", Read, Allow);
        let acl4 = acl(Topic, resource, Literal, user2, "host2", Write, Allow);
        let acl5 = acl(Topic, resource, Literal, user2, "*", Read, Allow);
        let mut authorizer = base_authorizer();
        for binding in [&acl1, &acl2, &acl3, &acl4, &acl5] {
            assert!(authorizer.add(binding.clone()));
        }
        assert!(!authorizer.add(acl2.clone()), "adding an existing ACL is a no-op");
        assert_eq!(authorizer.acl_count(), 5);
        let by_principal = |principal: &str| AclBindingFilter {
            principal: Some(principal.to_owned()),
            ..AclBindingFilter::ANY
        };
        assert_eq!(authorizer.describe(&by_principal(user1)), [acl1.clone(), acl2.clone()]);
        assert_eq!(
            authorizer.describe(&by_principal(user2)),
            [acl5.clone(), acl3.clone(), acl4.clone()]
        );
        assert_eq!(authorizer.describe(&by_principal("User:*")), []);

        let wildcard_read = acl(Topic, "*", Literal, "User:*", "*", Read, Allow);
        let wildcard_write = acl(Topic, "*", Literal, "User:*", "*", Write, Allow);
        let prefixed_read = acl(Topic, "foo", Prefixed, "User:*", "*", Read, Allow);
        let deny_read_prefixed = acl(Topic, "foo", Prefixed, "User:*", "*", Read, Deny);
        add_all(
            &mut authorizer,
            &[
                wildcard_read.clone(),
                wildcard_write.clone(),
                prefixed_read.clone(),
                deny_read_prefixed.clone(),
            ],
        );
        assert_eq!(
            authorizer.describe(&resource_filter(Topic, "*", Literal)),
            [wildcard_read.clone(), wildcard_write.clone()]
        );
        assert_eq!(
            authorizer.describe(&resource_filter(Topic, "foo", Prefixed)),
            [deny_read_prefixed.clone(), prefixed_read.clone()]
        );
        assert_eq!(authorizer.describe(&resource_filter(Topic, "foo", Literal)), []);
        assert_eq!(
            authorizer.describe(&by_principal("User:*")).len(),
            4,
            "wildcard principal ACLs"
        );

        // testDeleteAclOnWildcardResource, then testDeleteAllAclOnPrefixedResource.
        assert_eq!(authorizer.remove_matching(&wildcard_read.to_filter()), [wildcard_read]);
        assert_eq!(
            authorizer.describe(&resource_filter(Topic, "*", Literal)),
            std::slice::from_ref(&wildcard_write)
        );
        assert_eq!(authorizer.remove_matching(&resource_filter(Topic, "foo", Prefixed)).len(), 2);
        assert_eq!(authorizer.describe(&resource_filter(Topic, "foo", Prefixed)), []);
        // Remove all ACLs of the literal resource.
        assert_eq!(authorizer.remove_matching(&resource_filter(Topic, resource, Literal)).len(), 5);
        assert_eq!(authorizer.acls().collect::<Vec<_>>(), std::slice::from_ref(&wildcard_write));
        assert_eq!(authorizer.acl_count(), 1);
        assert_eq!(authorizer.remove_matching(&AclBindingFilter::ANY), [wildcard_write]);
        assert_eq!(authorizer.acl_count(), 0);
        assert!(authorizer.by_type.is_empty(), "empty maps are dropped");
    }

    // AuthorizerTest.testAclsFilter (DescribeAcls and DeleteAcls with MATCH and ANY filters).
    #[test]
    fn test_acls_filter() {
        let (resource1, resource2) = ("foo-1a2b", "bar-3c4d");
        let acl1 = acl(Topic, resource1, Literal, "User:alice", "*", Read, Allow);
        let acl2 = acl(Topic, resource1, Literal, "User:alice", "192.168.0.1", Write, Allow);
        let acl3 = acl(Topic, resource2, Literal, "User:alice", "*", Describe, Allow);
        let acl4 = acl(Topic, "bar-", Prefixed, "User:*", "*", Read, Allow);
        let mut authorizer = base_authorizer();
        add_all(&mut authorizer, &[acl1.clone(), acl2.clone(), acl3.clone(), acl4.clone()]);
        let mut all = authorizer.describe(&AclBindingFilter::ANY);
        all.sort();
        let mut expected = vec![acl1.clone(), acl2.clone(), acl3.clone(), acl4.clone()];
        expected.sort();
        assert_eq!(all, expected);
        assert_eq!(
            authorizer.describe(&resource_filter(Topic, resource1, Literal)),
            [acl1.clone(), acl2.clone()]
        );
        assert_eq!(
            authorizer.describe(&resource_filter(Topic, "bar-", Prefixed)),
            std::slice::from_ref(&acl4)
        );
        let matching = resource_filter(ResourceType::Any, resource2, Match);
        assert_eq!(authorizer.describe(&matching), [acl4.clone(), acl3.clone()]);

        // Kafka matches every filter of one DeleteAcls request before deleting.
        let filters = [
            matching,
            acl1.to_filter(),
            resource_filter(Topic, resource2, Literal),
            resource_filter(Topic, "baz", PatternType::Any),
        ];
        let results: Vec<Vec<AclBinding>> =
            filters.iter().map(|f| authorizer.describe(f)).collect();
        for binding in results.iter().flatten() {
            authorizer.remove(binding);
        }
        assert_eq!(results, [vec![acl4, acl3.clone()], vec![acl1], vec![acl3], vec![]]);
        assert_eq!(authorizer.acls().collect::<Vec<_>>(), [acl2]);
    }

    // BaseAuthorizerTest.testAuthorizeByResourceTypeMultipleAddAndRemove.
    #[test]
    fn test_authorize_by_resource_type_multiple_add_and_remove() {
        let (user1, host1) = ("User:user1", "192.168.1.1");
        let deny_read = acl(Topic, "sb1-9", Literal, user1, host1, Read, Deny);
        let allow_read = acl(Topic, "sb1-9", Literal, user1, host1, Read, Allow);
        let mut authorizer = base_authorizer();
        for _ in 0..3 {
            assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
            authorizer.add(allow_read.clone());
            assert!(authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
            for _ in 0..3 {
                authorizer.add(deny_read.clone());
                assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
                authorizer.remove(&deny_read);
                authorizer.add(allow_read.clone());
                assert!(authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
            }
            authorizer.remove(&allow_read);
            assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        }
    }

    // BaseAuthorizerTest.testAuthorizeByResourceTypeIsolationUnrelatedDenyWontDominateAllow.
    #[test]
    fn test_authorize_by_resource_type_isolation() {
        let (user1, user2, host1, host2) =
            ("User:user1", "User:user2", "192.168.1.1", "192.168.1.2");
        let mut authorizer = base_authorizer();
        add_all(
            &mut authorizer,
            &[
                acl(Topic, "sb1-1", Literal, user1, host1, Read, Deny),
                acl(Topic, "sb1-1", Literal, user2, host1, Read, Deny),
                acl(Topic, "sb1-1", Literal, user1, host2, Write, Deny),
                acl(Topic, "sb1-1", Literal, user2, host2, Read, Deny),
                acl(Topic, "sb1-1", Literal, user1, host2, Read, Allow),
                acl(Topic, "sb2-2", Literal, user1, host2, Read, Deny),
                acl(Group, "s", Prefixed, user1, host2, Read, Deny),
            ],
        );
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Group));
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, TransactionalId));
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Cluster));
        assert!(authorizer.authorize_by_resource_type(user1, host2, Read, Topic));
    }

    // BaseAuthorizerTest.testAuthorizeByResourceTypeDenyTakesPrecedence and
    // testAuthorizeByResourceTypeWithAllOperationAce.
    #[test]
    fn test_authorize_by_resource_type_deny_and_all_operation() {
        let (user1, host1) = ("User:user1", "192.168.1.1");
        let mut authorizer = base_authorizer();
        add_all(&mut authorizer, &[acl(Topic, "sb1-1", Literal, user1, host1, Write, Allow)]);
        assert!(authorizer.authorize_by_resource_type(user1, host1, Write, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb1-1", Literal, user1, host1, Write, Deny)]);
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Write, Topic));

        let mut authorizer = base_authorizer();
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        add_all(
            &mut authorizer,
            &[
                acl(Topic, "sb1-2", Literal, user1, host1, Write, Deny),
                acl(Topic, "sb1-2", Literal, user1, host1, All, Allow),
            ],
        );
        assert!(authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb1-2", Literal, user1, host1, All, Deny)]);
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
    }

    // BaseAuthorizerTest.testAuthorizeByResourceTypePrefixedResourceDenyDominate.
    #[test]
    fn test_authorize_by_resource_type_prefixed_deny_dominates() {
        let (user1, host1) = ("User:user1", "192.168.1.1");
        let allow = |name: &str| acl(Group, name, Prefixed, user1, host1, Read, Allow);
        let deny = |name: &str| acl(Group, name, Prefixed, user1, host1, Read, Deny);
        let mut authorizer = base_authorizer();
        let steps = [
            (allow("abcde"), true),
            (deny("abcd"), false),
            (allow("abc"), true),
            (deny("a"), false),
            (allow("ab"), false),
        ];
        for (binding, expected) in steps {
            add_all(&mut authorizer, std::slice::from_ref(&binding));
            assert_eq!(
                authorizer.authorize_by_resource_type(user1, host1, Read, Group),
                expected,
                "after {binding}"
            );
        }
    }

    // BaseAuthorizerTest.testAuthorizeByResourceTypeWildcardResourceDenyDominate.
    #[test]
    fn test_authorize_by_resource_type_wildcard_deny_dominates() {
        let (user1, host1) = ("User:user1", "192.168.1.1");
        let mut authorizer = base_authorizer();
        let steps = [
            (acl(Group, "hello", Prefixed, user1, host1, Write, Allow), true),
            (acl(Group, "*", Literal, user1, host1, Write, Deny), false),
            (acl(Group, "*", Literal, user1, host1, Write, Allow), false),
            (acl(Group, "aloha", Literal, user1, host1, Write, Allow), false),
        ];
        for (binding, expected) in steps {
            add_all(&mut authorizer, std::slice::from_ref(&binding));
            assert_eq!(
                authorizer.authorize_by_resource_type(user1, host1, Write, Group),
                expected,
                "after {binding}"
            );
        }
    }

    // BaseAuthorizerTest.testAuthorizeByResourceTypeWithAllHostAce and
    // testAuthorizeByResourceTypeWithAllPrincipalAce.
    #[test]
    fn test_authorize_by_resource_type_all_host_and_all_principal() {
        let (user1, user2, host1, host2) =
            ("User:user1", "User:user2", "192.168.1.1", "192.168.1.2");
        let mut authorizer = base_authorizer();
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb1-1", Literal, user1, host1, Read, Allow)]);
        assert!(authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb1-1", Literal, user1, "*", Read, Deny)]);
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb2-2", Literal, user1, host1, Read, Deny)]);
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        assert!(!authorizer.authorize_by_resource_type(user1, host2, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb2-2", Literal, user1, "*", Read, Allow)]);
        assert!(authorizer.authorize_by_resource_type(user1, host2, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb2-2", Literal, user1, "*", Read, Deny)]);
        assert!(!authorizer.authorize_by_resource_type(user1, host2, Read, Topic));

        let mut authorizer = base_authorizer();
        add_all(&mut authorizer, &[acl(Topic, "sb1-1", Literal, user1, host1, Read, Allow)]);
        assert!(authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb1-1", Literal, "User:*", host1, Read, Deny)]);
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb2-2", Literal, user1, host1, Read, Deny)]);
        assert!(!authorizer.authorize_by_resource_type(user1, host1, Read, Topic));
        assert!(!authorizer.authorize_by_resource_type(user2, host1, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb2-2", Literal, "User:*", host1, Read, Allow)]);
        assert!(authorizer.authorize_by_resource_type(user2, host1, Read, Topic));
        add_all(&mut authorizer, &[acl(Topic, "sb2-2", Literal, "User:*", host1, Read, Deny)]);
        assert!(!authorizer.authorize_by_resource_type(user2, host1, Read, Topic));
    }

    // BaseAuthorizerTest.testAuthorizeByResourceTypeSuperUserHasAccess and
    // AuthorizerTest.testAuthorizeByResourceTypeNoAclFoundOverride.
    #[test]
    fn test_authorize_by_resource_type_super_user_and_no_acl_found() {
        let mut authorizer = base_authorizer();
        for rt in [Topic, Cluster, Group, TransactionalId] {
            add_all(
                &mut authorizer,
                &[acl(
                    rt,
                    if rt == Cluster { CLUSTER_NAME } else { "*" },
                    Literal,
                    "User:*",
                    "*",
                    All,
                    Deny,
                )],
            );
        }
        for rt in [Topic, Cluster, Group, TransactionalId] {
            assert!(authorizer.authorize_by_resource_type(
                "User:superuser1",
                "192.0.4.4",
                Read,
                rt
            ));
            assert!(!authorizer.authorize_by_resource_type("User:alice", "192.0.4.4", Read, rt));
        }
        assert!(!authorizer.authorize_by_resource_type(
            "User:superuser1",
            "192.0.4.4",
            Read,
            ResourceType::Any
        ));
        assert!(!authorizer.authorize_by_resource_type(
            "User:superuser1",
            "192.0.4.4",
            AclOperation::Any,
            Topic
        ));

        let open = Authorizer::new(vec![], true);
        assert!(open.authorize_by_resource_type("User:alice", "192.168.0.1", Read, Topic));
        assert!(open.authorize_by_resource_type("User:alice", "192.168.0.1", Write, Topic));
        // An ACL that applies to `hardcode` makes "no ACL found" false for the first check.
        let mut closed = Authorizer::new(vec![], true);
        closed.add(acl(Topic, "hard", Prefixed, "User:bob", "*", Read, Allow));
        assert!(!closed.authorize_by_resource_type("User:alice", "192.168.0.1", Read, Topic));
        // Implied operations count for the `hardcode` check only.
        let mut implied = Authorizer::new(vec![], false);
        implied.add(acl(Topic, "x", Literal, "User:alice", "*", Read, Allow));
        assert!(!implied.authorize_by_resource_type("User:alice", "192.168.0.1", Describe, Topic));
        implied.add(acl(Topic, "*", Literal, "User:alice", "*", Read, Allow));
        assert!(implied.authorize_by_resource_type("User:alice", "192.168.0.1", Describe, Topic));
    }

    /// The authorized-operations bit field (`AuthHelper.authorizedOperations` over
    /// `AclEntry.supportedOperations`).
    #[test]
    fn test_authorized_operations_bits() {
        assert_eq!(
            supported_operations(Topic),
            [Read, Write, Create, Describe, Delete, Alter, DescribeConfigs, AlterConfigs]
        );
        assert_eq!(supported_operations(ResourceType::User), [CreateTokens, DescribeTokens]);
        assert_eq!(supported_operations(ResourceType::Any), []);
        let authorizer = standard_authorizer(&[
            acl(Topic, "t", Literal, "User:alice", "*", Read, Allow),
            acl(Topic, "t", Literal, "User:alice", "*", AlterConfigs, Allow),
            acl(Group, "g", Literal, "User:alice", "*", All, Allow),
            acl(Group, "g", Literal, "User:alice", "*", Delete, Deny),
            acl(Cluster, CLUSTER_NAME, Literal, "User:alice", "*", ClusterAction, Allow),
        ]);
        // Read(3), Describe(8) implied, DescribeConfigs(10) implied, AlterConfigs(11).
        assert_eq!(
            authorizer.authorized_operations("User:alice", LOCALHOST, Topic, "t"),
            (1 << 3) | (1 << 8) | (1 << 10) | (1 << 11)
        );
        // Group: Read, Describe, DescribeConfigs, AlterConfigs (not Delete, denied).
        assert_eq!(
            authorizer.authorized_operations("User:alice", LOCALHOST, Group, "g"),
            (1 << 3) | (1 << 8) | (1 << 10) | (1 << 11)
        );
        assert_eq!(
            authorizer.authorized_operations("User:alice", LOCALHOST, Cluster, CLUSTER_NAME),
            1 << 9
        );
        assert_eq!(authorizer.authorized_operations("User:bob", LOCALHOST, Topic, "t"), 0);
        // A super user gets every supported operation: the topic value Kafka clients expect.
        assert_eq!(authorizer.authorized_operations("User:superman", LOCALHOST, Topic, "t"), 3576);
        assert_eq!(operations_bit_field(supported_operations(Topic)), 3576);
        assert_eq!(
            authorizer.authorized_operations("User:superman", LOCALHOST, Cluster, CLUSTER_NAME),
            operations_bit_field(supported_operations(Cluster))
        );
    }

    /// 100,000 ACLs: decisions and filtered look-ups still see only the relevant ones.
    #[test]
    fn many_acls_are_indexed() {
        let mut authorizer = Authorizer::new(vec![], false);
        for i in 0..50_000 {
            authorizer.add(acl(
                Topic,
                &format!("topic-{i:05}"),
                Literal,
                &format!("User:u{i}"),
                "*",
                Read,
                Allow,
            ));
            authorizer.add(acl(
                Topic,
                &format!("team-{i:05}-"),
                Prefixed,
                &format!("User:u{i}"),
                "*",
                Write,
                Allow,
            ));
        }
        assert_eq!(authorizer.acl_count(), 100_000);
        assert!(authorizer.authorize("User:u123", LOCALHOST, Read, Topic, "topic-00123"));
        assert!(!authorizer.authorize("User:u124", LOCALHOST, Read, Topic, "topic-00123"));
        assert!(authorizer.authorize("User:u49999", LOCALHOST, Write, Topic, "team-49999-orders"));
        assert!(!authorizer.authorize("User:u49999", LOCALHOST, Write, Topic, "team-4999-orders"));
        assert_eq!(authorizer.describe(&resource_filter(Topic, "team-00042-x", Match)).len(), 1);
        assert_eq!(authorizer.describe(&resource_filter(Topic, "topic-00042", Literal)).len(), 1);
    }

    /// The index answers as a scan of every ACL with Kafka's matching rules would, on random
    /// ACLs over a small alphabet (so that names, prefixes and wildcards collide), an empty
    /// prefix included.
    #[test]
    fn index_agrees_with_a_scan_of_every_acl() {
        let mut seed: u64 = 0x5eed;
        let mut next = |bound: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 33) as usize) % bound
        };
        let names = ["", "*", "a", "ab", "abc", "abd", "b", "ba", "\u{e4}", "\u{e4}b", "a*"];
        let principals = ["User:alice", "User:bob", "User:*"];
        let hosts = ["*", "10.0.0.1", "10.0.0.2"];
        let operations = [All, Read, Write, Describe, AlterConfigs, DescribeConfigs, Delete];
        let types = [Topic, Group];
        for round in 0..40 {
            let mut authorizer = Authorizer::new(vec![], round % 2 == 0);
            for _ in 0..(5 + next(30)) {
                authorizer.add(acl(
                    types[next(types.len())],
                    names[next(names.len())],
                    if next(2) == 0 { Literal } else { Prefixed },
                    principals[next(principals.len())],
                    hosts[next(hosts.len())],
                    operations[next(operations.len())],
                    if next(3) == 0 { Deny } else { Allow },
                ));
            }
            let all: Vec<AclBinding> = authorizer.acls().collect();
            for resource_type in types {
                for name in
                    ["", "*", "a", "ab", "abc", "abcd", "abx", "b", "bab", "c", "\u{e4}bc", "a*b"]
                {
                    for principal in ["User:alice", "User:bob", "User:carol"] {
                        for host in ["10.0.0.1", "10.0.0.3"] {
                            for operation in
                                [Read, Write, Describe, DescribeConfigs, Delete, Create]
                            {
                                let applying: Vec<&AclBinding> = all
                                    .iter()
                                    .filter(|b| b.resource_type == resource_type)
                                    .filter(|b| match b.pattern_type {
                                        Literal => {
                                            b.resource_name == name || b.resource_name == "*"
                                        }
                                        _ => name.starts_with(b.resource_name.as_str()),
                                    })
                                    .collect();
                                let results: Vec<Option<AclPermissionType>> = applying
                                    .iter()
                                    .map(|b| {
                                        let entry = AccessControlEntry {
                                            principal: b.principal.clone(),
                                            host: b.host.clone(),
                                            operation: b.operation,
                                            permission: b.permission,
                                        };
                                        entry.find_result(principal, host, operation)
                                    })
                                    .collect();
                                let expected = if results.contains(&Some(Deny)) {
                                    false
                                } else if results.contains(&Some(Allow)) {
                                    true
                                } else if applying.is_empty() {
                                    authorizer.allow_everyone_if_no_acl_found()
                                } else {
                                    false
                                };
                                assert_eq!(
                                    authorizer.authorize(
                                        principal,
                                        host,
                                        operation,
                                        resource_type,
                                        name
                                    ),
                                    expected,
                                    "round {round}: {principal} {host} {operation} {resource_type}:{name:?}"
                                );
                            }
                        }
                    }
                    for pattern_type in [PatternType::Any, Match, Literal, Prefixed] {
                        let filter = AclBindingFilter {
                            resource_type,
                            resource_name: Some(name.to_owned()),
                            pattern_type,
                            ..AclBindingFilter::ANY
                        };
                        let mut expected: Vec<AclBinding> =
                            all.iter().filter(|b| filter.matches(b)).cloned().collect();
                        expected.sort();
                        assert_eq!(
                            authorizer.describe(&filter),
                            expected,
                            "round {round}: {filter}"
                        );
                    }
                }
            }
        }
    }
}
