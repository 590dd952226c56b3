//! Tests of `acl.rs`: the authorizer's decisions, Kafka's `AuthorizerTest` and
//! `StandardAuthorizerTest` cases (the helpers are the parent module's).

use super::*;

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
    assert!(authorizer.authorize("User:random", "192.0.4.4", Read, Topic, resource), "allow all");

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
        let mut authorizer =
            Authorizer::new(vec!["User:alice".to_owned(), "User:chris".to_owned()], allow_everyone);
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
    assert!(authorizer.authorize(user1, host1, Read, Topic, resource), "READ through the wildcard");
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
    let all_ops: Vec<AclOperation> = valid_ops.iter().copied().filter(|op| *op != All).collect();
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
        add_all(&mut authorizer, &[acl(Cluster, CLUSTER_NAME, Literal, user, "*", *parent, Allow)]);
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
        [foo(Read, Allow), foo(Write, Allow), bar(DescribeConfigs, Deny), bar(AlterConfigs, Deny)]
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
    let check =
        |principal, actions: &[(AclOperation, &str)]| topic_checks(&authorizer, principal, actions);
    assert_eq!(
        check("User:alice", &[(Write, "foo"), (Read, "foo"), (Describe, "foo"), (Read, "foobar")]),
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
    let check =
        |principal, actions: &[(AclOperation, &str)]| topic_checks(&authorizer, principal, actions);
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
    let check =
        |principal, actions: &[(AclOperation, &str)]| topic_checks(&authorizer, principal, actions);
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
        "", "a", "ab", "abc", "abd", "abcd", "abce", "ac", "b", "\u{e4}", "\u{e4}b", "\u{e4}bc",
        "ab\u{e4}", "zz",
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
    for name in ["abcde", "abd", "ab", "abz", "b", "c", "\u{e4}bcx", "ab\u{e4}x", "", "zzz", "aa"] {
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
    assert_eq!(authorizer.describe(&by_principal("User:*")).len(), 4, "wildcard principal ACLs");

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
    let results: Vec<Vec<AclBinding>> = filters.iter().map(|f| authorizer.describe(f)).collect();
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
    let (user1, user2, host1, host2) = ("User:user1", "User:user2", "192.168.1.1", "192.168.1.2");
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
    let (user1, user2, host1, host2) = ("User:user1", "User:user2", "192.168.1.1", "192.168.1.2");
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
        assert!(authorizer.authorize_by_resource_type("User:superuser1", "192.0.4.4", Read, rt));
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
    // Group: Read, Describe (not Delete, denied; Kafka 3.9 has no group configs).
    assert_eq!(
        authorizer.authorized_operations("User:alice", LOCALHOST, Group, "g"),
        (1 << 3) | (1 << 8)
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
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
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
                        for operation in [Read, Write, Describe, DescribeConfigs, Delete, Create] {
                            let applying: Vec<&AclBinding> = all
                                .iter()
                                .filter(|b| b.resource_type == resource_type)
                                .filter(|b| match b.pattern_type {
                                    Literal => b.resource_name == name || b.resource_name == "*",
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
                    assert_eq!(authorizer.describe(&filter), expected, "round {round}: {filter}");
                }
            }
        }
    }
}
