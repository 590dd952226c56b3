//! Tests of `acl.rs`.

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
    let supers = parse_super_users("User:superuser1; User:superuser2").expect("valid super.users");
    Authorizer::new(supers, false)
}

/// `principal`'s decisions from localhost for each (operation, topic name) of `actions`.
fn topic_checks(
    authorizer: &Authorizer,
    principal: &str,
    actions: &[(AclOperation, &str)],
) -> Vec<bool> {
    actions
        .iter()
        .map(|(op, name)| authorizer.authorize(principal, LOCALHOST, *op, Topic, name))
        .collect()
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
        (filter(ResourceType::Any, Some("Name"), Literal), pattern(Topic, "Name", Literal), true),
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
    let entry_filter = |principal: Option<&str>, host: Option<&str>, op, perm| AclBindingFilter {
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
        (AclBinding { resource_type: ResourceType::Any, ..ok.clone() }, "Invalid resourceType ANY"),
        (
            AclBinding { resource_type: ResourceType::Unknown, ..ok.clone() },
            "Invalid resourceType UNKNOWN",
        ),
        (AclBinding { pattern_type: Match, ..ok.clone() }, "Invalid patternType MATCH"),
        (AclBinding { pattern_type: PatternType::Any, ..ok.clone() }, "Invalid patternType ANY"),
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
            AclBinding { resource_type: Cluster, resource_name: "other".to_owned(), ..ok.clone() },
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

/// The authorizer's decisions (Kafka's `AuthorizerTest` and `StandardAuthorizerTest` cases).
#[path = "acl_authorizer_tests.rs"]
mod authorizer;
