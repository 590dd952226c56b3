//! The group APIs through the wire with the `kafka-protocol` crate: every group API at every
//! advertised version, a two-member rebalance across connections, Kafka's error codes,
//! committed offsets across a restart, and `__consumer_offsets` written by real Kafka.

#![allow(clippy::too_many_lines, reason = "each test walks one API through its cases")]

use crate::common;

use bytes::Bytes;
use common::{Client, start};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, DeleteGroupsRequest, DescribeGroupsRequest,
    FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest,
    OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use seglog_broker::{GROUP_APIS, SUPPORTED_APIS};

/// A KIP-848 join of `group` subscribed to `t`: the heartbeat answer.
async fn consumer_join(
    client: &mut Client,
    group: &str,
    member_id: &str,
    version: i16,
) -> ConsumerGroupHeartbeatResponse {
    let request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid(group))
        .with_member_id(s(member_id))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_names(Some(vec![TopicName(s("t"))]));
    client.send(&request, version).await
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

fn gid(text: &str) -> GroupId {
    GroupId(s(text))
}

/// A broker with a fast first rebalance and a small `__consumer_offsets`.
async fn broker(dir: &std::path::Path) -> seglog_broker::Server {
    let server = start(
        dir,
        &[("group.initial.rebalance.delay.ms", "0"), ("offsets.topic.num.partitions", "5")],
    )
    .await;
    // Offsets are committed only for partitions that exist, as in Kafka.
    for topic in ["t", "u"] {
        if !server.broker().manager().topics().iter().any(|known| known == topic) {
            server
                .broker()
                .manager()
                .create_topic(topic, 2, std::collections::BTreeMap::default())
                .expect("topic");
        }
    }
    server
}

fn join_request(group: &str, member_id: &str, instance: Option<&str>) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(gid(group))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(20_000)
        .with_member_id(s(member_id))
        .with_group_instance_id(instance.map(s))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default().with_name(s("range")).with_metadata(
                Bytes::from_static(b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"),
            ),
        ])
}

/// Joins `group` as a new member at `version` (KIP-394's two steps from v4).
async fn join(client: &mut Client, group: &str, version: i16) -> JoinGroupResponse {
    let response = client.send(&join_request(group, "", None), version).await;
    if version < 4 {
        return response;
    }
    assert_eq!(response.error_code, 79, "MEMBER_ID_REQUIRED at v{version}");
    assert!(!response.member_id.is_empty());
    client.send(&join_request(group, response.member_id.as_str(), None), version).await
}

fn sync_request(group: &str, generation: i32, member: &str, assignment: &[u8]) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(gid(group))
        .with_generation_id(generation)
        .with_member_id(s(member))
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(s(member))
                .with_assignment(Bytes::copy_from_slice(assignment)),
        ])
}

/// One member joined and synced: `(member id, generation)`.
async fn stable_group(client: &mut Client, group: &str) -> (String, i32) {
    let joined = join(client, group, 5).await;
    assert_eq!(joined.error_code, 0);
    let member = joined.member_id.to_string();
    let synced = client.send(&sync_request(group, joined.generation_id, &member, b"a"), 3).await;
    assert_eq!(synced.error_code, 0);
    (member, joined.generation_id)
}

fn commit_request(
    group: &str,
    generation: i32,
    member: &str,
    topic: &str,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(gid(group))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member))
        .with_topics(vec![
            OffsetCommitRequestTopic::default().with_name(TopicName(s(topic))).with_partitions(
                vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset)
                        .with_committed_metadata(Some(s("meta"))),
                ],
            ),
        ])
}

async fn commit(client: &mut Client, group: &str, topic: &str, offset: i64) {
    let response = client.send(&commit_request(group, -1, "", topic, offset), 8).await;
    assert_eq!(response.topics[0].partitions[0].error_code, 0);
}

/// The committed offset of `topic`-0 in `group`, via OffsetFetch v8.
async fn fetch_committed(client: &mut Client, group: &str, topic: &str) -> i64 {
    let request = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default().with_group_id(gid(group)).with_topics(Some(vec![
            OffsetFetchRequestTopics::default()
                .with_name(TopicName(s(topic)))
                .with_partition_indexes(vec![0]),
        ])),
    ]);
    let response: OffsetFetchResponse = client.send(&request, 8).await;
    assert_eq!(response.groups[0].error_code, 0);
    response.groups[0].topics[0].partitions[0].committed_offset
}

#[tokio::test]
async fn every_group_api_answers_at_every_advertised_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = broker(dir.path()).await;
    let mut client = Client::connect(&server).await;
    let advertised: Vec<_> =
        SUPPORTED_APIS.iter().filter(|(key, _, _)| GROUP_APIS.contains(key)).collect();
    assert_eq!(advertised.len(), GROUP_APIS.len(), "every group API is advertised");
    for &(api, min, max) in advertised {
        for version in min..=max {
            let group = format!("{api:?}-v{version}");
            match api {
                ApiKey::FindCoordinator => {
                    let request = if version < 4 {
                        FindCoordinatorRequest::default().with_key(s(&group))
                    } else {
                        FindCoordinatorRequest::default().with_coordinator_keys(vec![s(&group)])
                    };
                    let response = client.send(&request, version).await;
                    if version < 4 {
                        assert_eq!((response.error_code, response.node_id.0), (0, 1), "v{version}");
                        assert_eq!(response.port, i32::from(server.local_addr().port()));
                    } else {
                        let coordinator = &response.coordinators[0];
                        assert_eq!(
                            (coordinator.error_code, coordinator.node_id.0),
                            (0, 1),
                            "v{version}"
                        );
                        assert_eq!(coordinator.key.as_str(), group);
                    }
                }
                ApiKey::JoinGroup => {
                    let response = join(&mut client, &group, version).await;
                    assert_eq!((response.error_code, response.generation_id), (0, 1), "v{version}");
                    assert_eq!(response.leader, response.member_id, "v{version}");
                    assert_eq!(response.members.len(), 1, "v{version}");
                    assert_eq!(
                        response.protocol_name.as_ref().map(StrBytes::as_str),
                        Some("range")
                    );
                }
                ApiKey::SyncGroup => {
                    let joined = join(&mut client, &group, 5).await;
                    let member = joined.member_id.to_string();
                    let mut request = sync_request(&group, 1, &member, b"assignment");
                    if version >= 5 {
                        request.protocol_type = Some(s("consumer"));
                        request.protocol_name = Some(s("range"));
                    }
                    let response = client.send(&request, version).await;
                    assert_eq!(response.error_code, 0, "v{version}");
                    assert_eq!(response.assignment, Bytes::from_static(b"assignment"));
                }
                ApiKey::Heartbeat => {
                    let (member, generation) = stable_group(&mut client, &group).await;
                    let request = HeartbeatRequest::default()
                        .with_group_id(gid(&group))
                        .with_generation_id(generation)
                        .with_member_id(s(&member));
                    assert_eq!(client.send(&request, version).await.error_code, 0, "v{version}");
                    let stale = request.with_generation_id(generation + 5);
                    assert_eq!(client.send(&stale, version).await.error_code, 22, "v{version}");
                }
                ApiKey::LeaveGroup => {
                    let (member, _) = stable_group(&mut client, &group).await;
                    let request = if version < 3 {
                        LeaveGroupRequest::default()
                            .with_group_id(gid(&group))
                            .with_member_id(s(&member))
                    } else {
                        LeaveGroupRequest::default().with_group_id(gid(&group)).with_members(vec![
                            MemberIdentity::default().with_member_id(s(&member)),
                            MemberIdentity::default().with_member_id(s("nobody")),
                        ])
                    };
                    let response = client.send(&request, version).await;
                    assert_eq!(response.error_code, 0, "v{version}");
                    if version >= 3 {
                        let codes: Vec<i16> =
                            response.members.iter().map(|m| m.error_code).collect();
                        assert_eq!(codes, [0, 25], "v{version}");
                    }
                    let described = client
                        .send(&DescribeGroupsRequest::default().with_groups(vec![gid(&group)]), 5)
                        .await;
                    assert_eq!(described.groups[0].group_state.as_str(), "Empty", "v{version}");
                }
                ApiKey::OffsetCommit => {
                    let (member, generation) = stable_group(&mut client, &group).await;
                    let request = commit_request(&group, generation, &member, "t", 42);
                    let response = client.send(&request, version).await;
                    assert_eq!(response.topics[0].partitions[0].error_code, 0, "v{version}");
                    assert_eq!(fetch_committed(&mut client, &group, "t").await, 42, "v{version}");
                    let unknown = commit_request(&group, generation, &member, "no-such-topic", 1);
                    let response = client.send(&unknown, version).await;
                    assert_eq!(response.topics[0].partitions[0].error_code, 3, "v{version}");
                }
                ApiKey::OffsetFetch => {
                    commit(&mut client, &group, "t", 7).await;
                    if version < 8 {
                        let request = OffsetFetchRequest::default()
                            .with_group_id(gid(&group))
                            .with_topics(Some(vec![
                                OffsetFetchRequestTopic::default()
                                    .with_name(TopicName(s("t")))
                                    .with_partition_indexes(vec![0, 1]),
                            ]));
                        let response = client.send(&request, version).await;
                        let partitions = &response.topics[0].partitions;
                        assert_eq!(
                            (partitions[0].committed_offset, partitions[1].committed_offset),
                            (7, -1),
                            "v{version}"
                        );
                        assert_eq!(
                            partitions[0].metadata.as_ref().map(StrBytes::as_str),
                            Some("meta")
                        );
                        if version >= 2 {
                            // All topics.
                            let all = OffsetFetchRequest::default()
                                .with_group_id(gid(&group))
                                .with_topics(None);
                            let response = client.send(&all, version).await;
                            assert_eq!(response.topics.len(), 1, "v{version}");
                        }
                    } else {
                        assert_eq!(fetch_committed(&mut client, &group, "t").await, 7);
                        let request = OffsetFetchRequest::default().with_groups(vec![
                            OffsetFetchRequestGroup::default()
                                .with_group_id(gid(&group))
                                .with_topics(None),
                            OffsetFetchRequestGroup::default()
                                .with_group_id(gid("unknown-group"))
                                .with_topics(None),
                        ]);
                        let response = client.send(&request, version).await;
                        assert_eq!(response.groups.len(), 2);
                        assert_eq!(response.groups[0].topics[0].partitions[0].committed_offset, 7);
                        assert!(response.groups[1].topics.is_empty());
                    }
                }
                ApiKey::ListGroups => {
                    stable_group(&mut client, &group).await;
                    let mut request = ListGroupsRequest::default();
                    if version >= 4 {
                        request.states_filter = vec![s("stable")];
                    }
                    let response = client.send(&request, version).await;
                    let listed = response
                        .groups
                        .iter()
                        .find(|g| g.group_id.0.as_str() == group)
                        .expect("listed");
                    assert_eq!(listed.protocol_type.as_str(), "consumer");
                    if version >= 4 {
                        assert_eq!(listed.group_state.as_str(), "Stable");
                        assert!(response.groups.iter().all(|g| g.group_state.as_str() == "Stable"));
                    }
                }
                ApiKey::DescribeGroups => {
                    let (member, _) = stable_group(&mut client, &group).await;
                    let mut request = DescribeGroupsRequest::default()
                        .with_groups(vec![gid(&group), gid("never-was")]);
                    if version >= 3 {
                        request.include_authorized_operations = true;
                    }
                    let response = client.send(&request, version).await;
                    let described = &response.groups[0];
                    assert_eq!(
                        (described.error_code, described.group_state.as_str()),
                        (0, "Stable"),
                        "v{version}"
                    );
                    assert_eq!(described.protocol_data.as_str(), "range");
                    assert_eq!(described.members[0].member_id.as_str(), member);
                    assert_eq!(described.members[0].client_id.as_str(), "seglog-test");
                    assert_eq!(described.members[0].client_host.as_str(), "/127.0.0.1");
                    assert_eq!(described.members[0].member_assignment, Bytes::from_static(b"a"));
                    assert_eq!(response.groups[1].group_state.as_str(), "Dead");
                    assert_eq!(response.groups[1].error_code, if version >= 6 { 69 } else { 0 });
                }
                ApiKey::DeleteGroups => {
                    commit(&mut client, &group, "t", 3).await;
                    // A group of its own per version: a second join of one group would wait
                    // for the first member's session to time out.
                    let busy = format!("busy-{group}");
                    let (_, _) = stable_group(&mut client, &busy).await;
                    let request = DeleteGroupsRequest::default().with_groups_names(vec![
                        gid(&group),
                        gid(&busy),
                        gid("no-such-group"),
                    ]);
                    let response = client.send(&request, version).await;
                    let codes: Vec<i16> = response.results.iter().map(|r| r.error_code).collect();
                    assert_eq!(codes, [0, 68, 69], "v{version}");
                    assert_eq!(fetch_committed(&mut client, &group, "t").await, -1);
                }
                ApiKey::OffsetDelete => {
                    commit(&mut client, &group, "t", 3).await;
                    commit(&mut client, &group, "u", 4).await;
                    let request = OffsetDeleteRequest::default()
                        .with_group_id(gid(&group))
                        .with_topics(vec![
                            OffsetDeleteRequestTopic::default()
                                .with_name(TopicName(s("t")))
                                .with_partitions(vec![
                                    OffsetDeleteRequestPartition::default().with_partition_index(0),
                                ]),
                        ]);
                    let response = client.send(&request, version).await;
                    assert_eq!(response.error_code, 0);
                    assert_eq!(response.topics[0].partitions[0].error_code, 0);
                    assert_eq!(fetch_committed(&mut client, &group, "t").await, -1);
                    assert_eq!(fetch_committed(&mut client, &group, "u").await, 4);
                    let unknown = request.with_group_id(gid("no-such-group"));
                    assert_eq!(client.send(&unknown, version).await.error_code, 69);
                }
                ApiKey::ConsumerGroupHeartbeat => {
                    // v1 clients name themselves; v0 ones are named by the broker.
                    let own_id = if version >= 1 { "client-made-id" } else { "" };
                    let joined = consumer_join(&mut client, &group, own_id, version).await;
                    assert_eq!((joined.error_code, joined.member_epoch), (0, 1), "v{version}");
                    let member = joined.member_id.clone().expect("a member id");
                    if version >= 1 {
                        assert_eq!(member.as_str(), own_id);
                    }
                    let assignment = joined.assignment.expect("the first assignment");
                    assert_eq!(assignment.topic_partitions.len(), 1);
                    assert_eq!(assignment.topic_partitions[0].partitions, [0, 1]);
                    assert!(!assignment.topic_partitions[0].topic_id.is_nil());
                    assert_eq!(joined.heartbeat_interval_ms, 5000);
                    let stale = ConsumerGroupHeartbeatRequest::default()
                        .with_group_id(gid(&group))
                        .with_member_id(member.clone())
                        .with_member_epoch(7)
                        .with_rebalance_timeout_ms(-1);
                    assert_eq!(client.send(&stale, version).await.error_code, 110, "v{version}");
                    let leave = stale.with_member_epoch(-1);
                    let left = client.send(&leave, version).await;
                    assert_eq!((left.error_code, left.member_epoch), (0, -1), "v{version}");
                }
                ApiKey::ConsumerGroupDescribe => {
                    let joined = consumer_join(&mut client, &group, "", 0).await;
                    assert_eq!(joined.error_code, 0);
                    let request = ConsumerGroupDescribeRequest::default()
                        .with_group_ids(vec![gid(&group), gid("no-such-group")])
                        .with_include_authorized_operations(true);
                    let response = client.send(&request, version).await;
                    let described = &response.groups[0];
                    assert_eq!(
                        (described.error_code, described.group_state.as_str()),
                        (0, "Stable")
                    );
                    assert_eq!((described.group_epoch, described.assignment_epoch), (1, 1));
                    assert_eq!(described.assignor_name.as_str(), "uniform");
                    let member = &described.members[0];
                    assert_eq!(member.member_epoch, 1);
                    assert_eq!(member.client_id.as_str(), "seglog-test");
                    assert_eq!(member.assignment.topic_partitions[0].topic_name.0.as_str(), "t");
                    assert_eq!(member.target_assignment.topic_partitions[0].partitions, [0, 1]);
                    assert_eq!(response.groups[1].error_code, 69);
                }
                other => panic!("no case for {other:?}"),
            }
        }
    }
    server.shutdown().await.expect("clean shutdown");
}

/// Two members on two connections: the second's join waits until the first rejoins (told by
/// its heartbeat), then both get generation 2 and their own assignments.
#[tokio::test]
async fn a_second_member_triggers_a_rebalance_across_connections() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = broker(dir.path()).await;
    let mut first = Client::connect(&server).await;
    let (m1, generation) = stable_group(&mut first, "g").await;
    assert_eq!(generation, 1);
    let mut second = Client::connect(&server).await;
    let id_required = second.send(&join_request("g", "", None), 5).await;
    assert_eq!(id_required.error_code, 79);
    let m2 = id_required.member_id.to_string();
    let waiting = tokio::spawn(async move {
        let response = second.send(&join_request("g", &m2, None), 5).await;
        (second, m2, response)
    });
    // The first member's heartbeat learns of the rebalance once the second has joined.
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(gid("g"))
        .with_generation_id(1)
        .with_member_id(s(&m1));
    let mut told = false;
    for _ in 0..200 {
        if first.send(&heartbeat, 4).await.error_code == 27 {
            told = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(told, "the heartbeat never said REBALANCE_IN_PROGRESS");
    let rejoined = first.send(&join_request("g", &m1, None), 5).await;
    let (mut second, m2, joined) = waiting.await.expect("join task");
    assert_eq!((rejoined.error_code, joined.error_code), (0, 0));
    assert_eq!((rejoined.generation_id, joined.generation_id), (2, 2));
    assert_eq!(rejoined.members.len(), 2, "the leader sees both members");
    assert!(joined.members.is_empty());
    let follower = tokio::spawn(async move {
        let response = second.send(&sync_request("g", 2, &m2, b""), 3).await;
        response.assignment
    });
    let mut leader_sync = sync_request("g", 2, &m1, b"p0");
    leader_sync.assignments.push(
        SyncGroupRequestAssignment::default()
            .with_member_id(joined.member_id.clone())
            .with_assignment(Bytes::from_static(b"p1")),
    );
    assert_eq!(first.send(&leader_sync, 3).await.assignment, Bytes::from_static(b"p0"));
    assert_eq!(follower.await.expect("sync task"), Bytes::from_static(b"p1"));
    server.shutdown().await.expect("clean shutdown");
}

/// Committed offsets and a stable group come back after a restart, and the group's member can
/// go on heartbeating in its generation.
#[tokio::test]
async fn committed_offsets_and_groups_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = broker(dir.path()).await;
    let mut client = Client::connect(&server).await;
    let (member, generation) = stable_group(&mut client, "g").await;
    for offset in [10, 20, 30] {
        let response = client.send(&commit_request("g", generation, &member, "t", offset), 8).await;
        assert_eq!(response.topics[0].partitions[0].error_code, 0);
    }
    commit(&mut client, "standalone", "t", 5).await;
    server.shutdown().await.expect("clean shutdown");
    let server = broker(dir.path()).await;
    let mut client = Client::connect(&server).await;
    assert_eq!(fetch_committed(&mut client, "g", "t").await, 30);
    assert_eq!(fetch_committed(&mut client, "standalone", "t").await, 5);
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(gid("g"))
        .with_generation_id(generation)
        .with_member_id(s(&member));
    assert_eq!(client.send(&heartbeat, 4).await.error_code, 0);
    server.shutdown().await.expect("clean shutdown");
}

/// `__consumer_offsets` written by Kafka 3.9 (fixture `seanorth-snappy`): the group and its
/// committed offsets, as `kafka-dump-log.sh --offsets-decoder` shows them (group
/// `simple-consumer-example`, generation 31 and empty; `some-topic`-0 at 8, `test-topic`-0 at
/// 0), are served after the directory is opened.
#[tokio::test]
async fn offsets_committed_by_kafka_are_served() {
    let Some(fixtures) = seglog_storage::testing::kafka_real_fixtures() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    seglog_storage::testing::copy_tree(&fixtures.join("seanorth-snappy"), dir.path());
    // Kafka would expire these 2024 offsets (offsets.retention.minutes, a week): keep them.
    let server =
        start(dir.path(), &[("node.id", "0"), ("offsets.retention.minutes", "100000000")]).await;
    let mut client = Client::connect(&server).await;
    assert_eq!(fetch_committed(&mut client, "simple-consumer-example", "some-topic").await, 8);
    assert_eq!(fetch_committed(&mut client, "simple-consumer-example", "test-topic").await, 0);
    let described = client
        .send(
            &DescribeGroupsRequest::default().with_groups(vec![gid("simple-consumer-example")]),
            5,
        )
        .await;
    assert_eq!(described.groups[0].group_state.as_str(), "Empty");
    assert_eq!(described.groups[0].protocol_type.as_str(), "consumer");
    // It goes on: a new member joins the group Kafka left at generation 31.
    let joined = join(&mut client, "simple-consumer-example", 5).await;
    assert_eq!((joined.error_code, joined.generation_id), (0, 32));
    server.shutdown().await.expect("clean shutdown");
}
