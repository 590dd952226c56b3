//! The denial matrix: every API in `SUPPORTED_APIS` called by `User:alice` under the
//! StandardAuthorizer with no ACL gets Kafka's authorization error and changes nothing (topics,
//! log offsets, configs, groups, committed offsets, transactions, log directories are compared
//! before and after), then succeeds once the ACLs Kafka's `KafkaApis` checks are granted. ACLs
//! are granted by stopping the broker and writing them into its `seglog-security` file; each
//! API's success runs with its own grants alone.

#![allow(clippy::too_many_lines, reason = "the matrix is one table of cases")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::alter_client_quotas_request::{
    EntityData as QuotaEntity, EntryData as QuotaEntry, OpData,
};
use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource as IncrementalResource, AlterableConfig as IncrementalConfig,
};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AlterClientQuotasRequest,
    AlterConfigsRequest, AlterReplicaLogDirsRequest, AlterUserScramCredentialsRequest, ApiKey,
    BrokerId, ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, CreateAclsRequest,
    CreatePartitionsRequest, CreateTopicsRequest, DeleteAclsRequest, DeleteGroupsRequest,
    DeleteRecordsRequest, DeleteTopicsRequest, DescribeAclsRequest, DescribeClientQuotasRequest,
    DescribeClusterRequest, DescribeConfigsRequest, DescribeGroupsRequest, DescribeLogDirsRequest,
    DescribeProducersRequest, DescribeTransactionsRequest, DescribeUserScramCredentialsRequest,
    EndTxnRequest, FetchRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest,
    IncrementalAlterConfigsRequest, InitProducerIdRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, ListOffsetsRequest, ListTransactionsRequest, MetadataRequest,
    OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, OffsetForLeaderEpochRequest,
    ProduceRequest, ProducerId, RequestHeader, ResponseHeader, SyncGroupRequest, TopicName,
    TransactionalId, TxnOffsetCommitRequest, UnregisterBrokerRequest, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use seglog_broker::{SUPPORTED_APIS, Server};
use seglog_format::Compression;
use seglog_storage::log::partition_log::TopicPartition;

use crate::common::{batch, start};

const ALICE: &str = "User:alice";
const ADMIN: &str = "User:admin";

const NONE: i16 = 0;
const TOPIC_DENIED: i16 = 29;
const GROUP_DENIED: i16 = 30;
const CLUSTER_DENIED: i16 = 31;
const TXN_ID_DENIED: i16 = 53;

/// The APIs without an authorization check: ApiVersions answers before authentication, and the
/// SASL exchange is the authentication itself (Kafka checks no ACL for any of them).
const UNCHECKED: [ApiKey; 3] =
    [ApiKey::ApiVersions, ApiKey::SaslHandshake, ApiKey::SaslAuthenticate];

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

fn topic(text: &str) -> TopicName {
    TopicName(s(text))
}

fn gid(text: &str) -> GroupId {
    GroupId(s(text))
}

fn tid(text: &str) -> TransactionalId {
    TransactionalId(s(text))
}

/// One ACL to grant to alice: resource type, resource name, operation (Kafka's names).
type Grant = (&'static str, &'static str, &'static str);

/// A broker with the StandardAuthorizer over two log directories, restarted to change ACLs.
struct Harness {
    dir: PathBuf,
    server: Option<Server>,
}

impl Harness {
    fn dirs(dir: &Path) -> (PathBuf, PathBuf) {
        (dir.join("a"), dir.join("b"))
    }

    async fn start(dir: &Path) -> Server {
        let (a, b) = Self::dirs(dir);
        let dirs = format!("{},{}", a.display(), b.display());
        start(
            dir,
            &[
                ("log.dirs", dirs.as_str()),
                (
                    "authorizer.class.name",
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                ),
                ("super.users", ADMIN),
                ("group.initial.rebalance.delay.ms", "0"),
                ("offsets.topic.num.partitions", "2"),
                ("transaction.state.log.num.partitions", "2"),
                ("num.partitions", "1"),
            ],
        )
        .await
    }

    fn server(&self) -> &Server {
        self.server.as_ref().expect("the broker runs")
    }

    /// Stops the broker, replaces alice's ACLs with `grants`, and starts it again.
    async fn restart_with(&mut self, grants: &[Grant]) {
        if let Some(server) = self.server.take() {
            server.shutdown().await.expect("clean shutdown");
        }
        let acls: Vec<serde_json::Value> = grants
            .iter()
            .map(|(resource_type, name, operation)| {
                serde_json::json!({
                    "resource_type": resource_type,
                    "resource_name": name,
                    "pattern_type": "Literal",
                    "principal": ALICE,
                    "host": "*",
                    "operation": operation,
                    "permission": "Allow",
                })
            })
            .collect();
        let text = serde_json::json!({ "version": 1, "acls": acls }).to_string();
        let first = Self::dirs(&self.dir).0;
        std::fs::create_dir_all(&first).expect("log dir");
        std::fs::write(first.join("seglog-security"), text).expect("write ACLs");
        self.server = Some(Self::start(&self.dir).await);
    }

    /// Sends `request` as `principal` through `handle_frame_as` and decodes the answer.
    async fn call<R: Request>(&self, principal: &str, request: &R, version: i16) -> R::Response {
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(s("authz-test")));
        let mut frame = BytesMut::new();
        header.encode(&mut frame, R::header_version(version)).expect("header encodes");
        request.encode(&mut frame, version).expect("request encodes");
        let answer =
            seglog_broker::handle_frame_as(self.server().broker(), frame.freeze(), principal)
                .await
                .expect("a response");
        let mut body: Bytes = answer.slice(4..);
        let header = ResponseHeader::decode(&mut body, R::Response::header_version(version))
            .expect("response header decodes");
        assert_eq!(header.correlation_id, 7);
        let response = R::Response::decode(&mut body, version).expect("response decodes");
        assert!(!body.has_remaining(), "trailing bytes");
        response
    }

    fn create_topic(&self, name: &str, partitions: i32) {
        self.server()
            .broker()
            .manager()
            .create_topic(name, partitions, BTreeMap::new())
            .expect("topic created");
    }

    /// Appends `n` records to partition 0 of `name` as the admin.
    async fn produce(&self, name: &str, n: usize) {
        let values: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let response = self.call(ADMIN, &produce_request(name, &values), 9).await;
        assert_eq!(response.responses[0].partition_responses[0].error_code, NONE, "{name}");
    }

    /// The admin's commit of offset 1 on partition 0 of `name` for the empty group `group`.
    async fn commit(&self, group: &str, name: &str) {
        let response = self.call(ADMIN, &offset_commit(group, name), 8).await;
        assert_eq!(response.topics[0].partitions[0].error_code, NONE, "{group}");
    }

    async fn init_producer(&self, principal: &str, txn: &str) -> (i64, i16) {
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(tid(txn)))
            .with_transaction_timeout_ms(60_000);
        let response = self.call(principal, &request, 4).await;
        assert_eq!(response.error_code, NONE, "InitProducerId {txn}");
        (response.producer_id.0, response.producer_epoch)
    }

    /// A classic member of `group`, joined and synced by alice: (member id, generation).
    async fn join(&self, group: &str, sync: bool) -> (StrBytes, i32) {
        let response = self.call(ALICE, &join_request(group), 3).await;
        assert_eq!(response.error_code, NONE, "JoinGroup {group}");
        if sync {
            let request = SyncGroupRequest::default()
                .with_group_id(gid(group))
                .with_generation_id(response.generation_id)
                .with_member_id(response.member_id.clone());
            assert_eq!(self.call(ALICE, &request, 3).await.error_code, NONE, "SyncGroup {group}");
        }
        (response.member_id, response.generation_id)
    }

    /// Everything a denied call must leave as it was.
    async fn snapshot(&self) -> Snapshot {
        let manager = self.server().broker().manager();
        let mut snapshot = Snapshot::default();
        for (name, count) in manager.topic_partition_counts() {
            let offsets = (0..count)
                .map(|partition| {
                    let log = manager
                        .get_log(&TopicPartition { topic: name.clone(), partition })
                        .expect("log");
                    (log.log_start_offset().expect("start"), log.log_end_offset().expect("end"))
                })
                .collect();
            snapshot.overrides.insert(name.clone(), manager.topic_overrides(&name));
            snapshot.topics.insert(name, offsets);
        }
        let groups = self.call(ADMIN, &ListGroupsRequest::default(), 4).await;
        for group in groups.groups {
            snapshot.groups.push((group.group_id.0.to_string(), group.group_state.to_string()));
            let request = OffsetFetchRequest::default().with_groups(vec![
                OffsetFetchRequestGroup::default()
                    .with_group_id(group.group_id.clone())
                    .with_topics(None),
            ]);
            let fetched = self.call(ADMIN, &request, 8).await;
            for topic in &fetched.groups[0].topics {
                for partition in &topic.partitions {
                    snapshot.offsets.push((
                        group.group_id.0.to_string(),
                        topic.name.0.to_string(),
                        partition.partition_index,
                        partition.committed_offset,
                    ));
                }
            }
        }
        let txns = self.call(ADMIN, &ListTransactionsRequest::default(), 1).await;
        snapshot.transactions = txns
            .transaction_states
            .iter()
            .map(|txn| (txn.transactional_id.0.to_string(), txn.transaction_state.to_string()))
            .collect();
        let every = DescribeLogDirsRequest::default().with_topics(None);
        let dirs = self.call(ADMIN, &every, 4).await;
        for dir in dirs.results {
            for topic in dir.topics {
                for partition in topic.partitions {
                    snapshot.replicas.push((
                        dir.log_dir.to_string(),
                        topic.name.0.to_string(),
                        partition.partition_index,
                        partition.is_future_key,
                    ));
                }
            }
        }
        let acls = self.call(ADMIN, &every_acl(), 3).await;
        snapshot.security.push(format!("{:?}", acls.resources));
        let users = DescribeUserScramCredentialsRequest::default().with_users(None);
        snapshot.security.push(format!("{:?}", self.call(ADMIN, &users, 0).await.results));
        let quotas = self.call(ADMIN, &DescribeClientQuotasRequest::default(), 1).await;
        snapshot.security.push(format!("{:?}", quotas.entries));
        snapshot
    }
}

/// A filter of every ACL.
fn every_acl() -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_type_filter(1)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(1)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1)
}

/// An ACL for bob: READ on the topic `name`.
fn create_acl(name: &str) -> CreateAclsRequest {
    CreateAclsRequest::default().with_creations(vec![
        AclCreation::default()
            .with_resource_type(2)
            .with_resource_name(s(name))
            .with_resource_pattern_type(3)
            .with_principal(s("User:bob"))
            .with_host(s("*"))
            .with_operation(3)
            .with_permission_type(3),
    ])
}

/// The filter of bob's ACLs on the topic `name`.
fn delete_acl(name: &str) -> DeleteAclsRequest {
    DeleteAclsRequest::default().with_filters(vec![
        DeleteAclsFilter::default()
            .with_resource_type_filter(2)
            .with_resource_name_filter(Some(s(name)))
            .with_pattern_type_filter(3)
            .with_principal_filter(Some(s("User:bob")))
            .with_host_filter(None)
            .with_operation(1)
            .with_permission_type(1),
    ])
}

fn upsert_scram(user: &str) -> AlterUserScramCredentialsRequest {
    AlterUserScramCredentialsRequest::default().with_upsertions(vec![
        ScramCredentialUpsertion::default()
            .with_name(s(user))
            .with_mechanism(1)
            .with_iterations(4096)
            .with_salt(Bytes::from_static(b"salt-salt-salt"))
            .with_salted_password(Bytes::from(vec![7; 32])),
    ])
}

fn alter_quota(user: &str) -> AlterClientQuotasRequest {
    AlterClientQuotasRequest::default().with_entries(vec![
        QuotaEntry::default()
            .with_entity(vec![
                QuotaEntity::default().with_entity_type(s("user")).with_entity_name(Some(s(user))),
            ])
            .with_ops(vec![OpData::default().with_key(s("producer_byte_rate")).with_value(1024.0)]),
    ])
}

/// The broker state a denied request must not change.
#[derive(Debug, Default, PartialEq)]
struct Snapshot {
    /// Each topic's partitions: (log start offset, log end offset).
    topics: BTreeMap<String, Vec<(i64, i64)>>,
    overrides: BTreeMap<String, BTreeMap<String, String>>,
    groups: Vec<(String, String)>,
    offsets: Vec<(String, String, i32, i64)>,
    transactions: Vec<(String, String)>,
    replicas: Vec<(String, String, i32, bool)>,
    /// The ACLs, SCRAM credentials and client quotas, as the admin describes them.
    security: Vec<String>,
}

fn produce_request(name: &str, values: &[&str]) -> ProduceRequest {
    ProduceRequest::default().with_acks(1).with_timeout_ms(5_000).with_topic_data(vec![
        TopicProduceData::default().with_name(topic(name)).with_partition_data(vec![
            PartitionProduceData::default().with_index(0).with_records(Some(batch(
                Compression::None,
                values,
                1_000,
            ))),
        ]),
    ])
}

fn offset_commit(group: &str, name: &str) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(gid(group))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default().with_name(topic(name)).with_partitions(vec![
                OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(1),
            ]),
        ])
}

fn join_request(group: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(gid(group))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from_static(b"\x00\x01")),
        ])
}

fn fetch_request(name: &str) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default().with_topic(topic(name)).with_partitions(vec![
            FetchPartition::default().with_partition(0).with_partition_max_bytes(1 << 20),
        ])])
}

fn metadata_request(names: Option<&[&str]>) -> MetadataRequest {
    MetadataRequest::default().with_allow_auto_topic_creation(false).with_topics(names.map(
        |names| {
            names
                .iter()
                .map(|name| MetadataRequestTopic::default().with_name(Some(topic(name))))
                .collect()
        },
    ))
}

fn add_partitions(
    txn: &str,
    (producer_id, epoch): (i64, i16),
    name: &str,
) -> AddPartitionsToTxnRequest {
    AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(tid(txn))
        .with_v3_and_below_producer_id(ProducerId(producer_id))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![
            AddPartitionsToTxnTopic::default().with_name(topic(name)).with_partitions(vec![0]),
        ])
}

fn add_offsets(txn: &str, (producer_id, epoch): (i64, i16), group: &str) -> AddOffsetsToTxnRequest {
    AddOffsetsToTxnRequest::default()
        .with_transactional_id(tid(txn))
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(epoch)
        .with_group_id(gid(group))
}

fn end_txn(txn: &str, (producer_id, epoch): (i64, i16)) -> EndTxnRequest {
    EndTxnRequest::default()
        .with_transactional_id(tid(txn))
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(epoch)
        .with_committed(false)
}

fn txn_offset_commit(
    txn: &str,
    (producer_id, epoch): (i64, i16),
    name: &str,
) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest::default()
        .with_transactional_id(tid(txn))
        .with_group_id(gid(name))
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(epoch)
        .with_generation_id(-1)
        .with_topics(vec![
            TxnOffsetCommitRequestTopic::default().with_name(topic(name)).with_partitions(vec![
                TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(1),
            ]),
        ])
}

fn find_coordinator(key_type: i8, key: &str) -> FindCoordinatorRequest {
    FindCoordinatorRequest::default().with_key_type(key_type).with_coordinator_keys(vec![s(key)])
}

fn cg_heartbeat(group: &str) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid(group))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_names(Some(vec![topic(group)]))
}

fn describe_configs(name: &str) -> DescribeConfigsRequest {
    DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default().with_resource_type(2).with_resource_name(s(name)),
        DescribeConfigsResource::default().with_resource_type(4).with_resource_name(s("1")),
    ])
}

fn alter_configs(name: &str) -> AlterConfigsRequest {
    AlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s(name))
            .with_configs(vec![
                AlterableConfig::default().with_name(s("retention.ms")).with_value(Some(s("1234"))),
            ]),
    ])
}

fn incremental_alter_configs(name: &str) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest::default().with_resources(vec![
        IncrementalResource::default()
            .with_resource_type(2)
            .with_resource_name(s(name))
            .with_configs(vec![
                IncrementalConfig::default()
                    .with_name(s("retention.ms"))
                    .with_config_operation(0)
                    .with_value(Some(s("4321"))),
            ]),
    ])
}

/// An ABORT marker for partition 0 of `name`, as a coordinator's broker sends it.
fn write_markers(name: &str) -> WriteTxnMarkersRequest {
    WriteTxnMarkersRequest::default().with_markers(vec![
        WritableTxnMarker::default()
            .with_producer_id(ProducerId(4242))
            .with_producer_epoch(0)
            .with_transaction_result(false)
            .with_coordinator_epoch(0)
            .with_topics(vec![
                WritableTxnMarkerTopic::default()
                    .with_name(topic(name))
                    .with_partition_indexes(vec![0]),
            ]),
    ])
}

fn alter_log_dirs(dir: &Path, name: &str) -> AlterReplicaLogDirsRequest {
    AlterReplicaLogDirsRequest::default().with_dirs(vec![
        AlterReplicaLogDir::default().with_path(s(&dir.display().to_string())).with_topics(vec![
            AlterReplicaLogDirTopic::default().with_name(topic(name)).with_partitions(vec![0]),
        ]),
    ])
}

/// The topics the matrix needs before it starts, each with `records` records.
const TOPICS: [(&str, usize); 22] = [
    ("produce", 0),
    ("write-markers", 0),
    ("fetch", 1),
    ("list-offsets", 1),
    ("metadata", 0),
    ("delete-topics", 0),
    ("delete-records", 2),
    ("epoch", 1),
    ("describe-configs", 0),
    ("alter-configs", 0),
    ("create-partitions", 0),
    ("incremental-alter-configs", 0),
    ("add-partitions", 0),
    ("end-txn", 0),
    ("txn-commit", 0),
    ("describe-producers", 1),
    ("commit", 0),
    ("fetch-offsets", 0),
    ("offset-delete", 0),
    ("cg-heartbeat", 0),
    ("cg-describe", 0),
    ("alter-dirs", 0),
];

/// What `api` needs granted (Kafka's `KafkaApis` checks).
fn grants(api: ApiKey) -> Vec<Grant> {
    match api {
        ApiKey::Produce => vec![("Topic", "produce", "Write")],
        ApiKey::Fetch => vec![("Topic", "fetch", "Read")],
        ApiKey::ListOffsets => vec![("Topic", "list-offsets", "Describe")],
        ApiKey::Metadata => vec![("Topic", "metadata", "Describe")],
        ApiKey::CreateTopics => vec![("Topic", "create-topics", "Create")],
        ApiKey::DeleteTopics => vec![("Topic", "delete-topics", "Delete")],
        ApiKey::DeleteRecords => vec![("Topic", "delete-records", "Delete")],
        ApiKey::OffsetForLeaderEpoch => vec![("Topic", "epoch", "Describe")],
        ApiKey::DescribeConfigs => vec![
            ("Topic", "describe-configs", "DescribeConfigs"),
            ("Cluster", "kafka-cluster", "DescribeConfigs"),
        ],
        ApiKey::AlterConfigs => vec![("Topic", "alter-configs", "AlterConfigs")],
        ApiKey::CreatePartitions => vec![("Topic", "create-partitions", "Alter")],
        ApiKey::IncrementalAlterConfigs => {
            vec![("Topic", "incremental-alter-configs", "AlterConfigs")]
        }
        ApiKey::DescribeCluster
        | ApiKey::DescribeQuorum
        | ApiKey::DescribeLogDirs
        | ApiKey::DescribeAcls
        | ApiKey::ListPartitionReassignments
        | ApiKey::DescribeUserScramCredentials => vec![("Cluster", "kafka-cluster", "Describe")],
        ApiKey::InitProducerId => vec![
            ("TransactionalId", "init-pid", "Write"),
            ("Cluster", "kafka-cluster", "IdempotentWrite"),
        ],
        ApiKey::AddPartitionsToTxn => {
            vec![
                ("TransactionalId", "add-partitions", "Write"),
                ("Topic", "add-partitions", "Write"),
            ]
        }
        ApiKey::AddOffsetsToTxn => {
            vec![("TransactionalId", "add-offsets", "Write"), ("Group", "add-offsets", "Read")]
        }
        ApiKey::EndTxn => {
            vec![("TransactionalId", "end-txn", "Write"), ("Topic", "end-txn", "Write")]
        }
        ApiKey::TxnOffsetCommit => vec![
            ("TransactionalId", "txn-commit", "Write"),
            ("Group", "txn-commit", "Read"),
            ("Topic", "txn-commit", "Read"),
        ],
        ApiKey::DescribeTransactions => vec![("TransactionalId", "describe-txn", "Describe")],
        ApiKey::ListTransactions => vec![("TransactionalId", "list-txn", "Describe")],
        ApiKey::DescribeProducers => vec![("Topic", "describe-producers", "Read")],
        ApiKey::FindCoordinator => {
            vec![("Group", "find-group", "Describe"), ("TransactionalId", "find-txn", "Describe")]
        }
        ApiKey::JoinGroup => vec![("Group", "join", "Read")],
        ApiKey::SyncGroup => vec![("Group", "sync", "Read")],
        ApiKey::Heartbeat => vec![("Group", "heartbeat", "Read")],
        ApiKey::LeaveGroup => vec![("Group", "leave", "Read")],
        ApiKey::OffsetCommit => vec![("Group", "commit", "Read"), ("Topic", "commit", "Read")],
        ApiKey::OffsetFetch => {
            vec![("Group", "fetch-offsets", "Describe"), ("Topic", "fetch-offsets", "Describe")]
        }
        ApiKey::ListGroups => vec![("Group", "listed", "Describe")],
        ApiKey::DescribeGroups => vec![("Group", "describe-groups", "Describe")],
        ApiKey::DeleteGroups => vec![("Group", "delete-groups", "Delete")],
        ApiKey::OffsetDelete => {
            vec![("Group", "offset-delete", "Delete"), ("Topic", "offset-delete", "Read")]
        }
        ApiKey::ConsumerGroupHeartbeat => vec![("Group", "cg-heartbeat", "Read")],
        ApiKey::ConsumerGroupDescribe => vec![("Group", "cg-describe", "Describe")],
        ApiKey::AlterReplicaLogDirs
        | ApiKey::UnregisterBroker
        | ApiKey::ElectLeaders
        | ApiKey::AlterPartitionReassignments
        | ApiKey::CreateAcls
        | ApiKey::DeleteAcls
        | ApiKey::AlterUserScramCredentials => {
            vec![("Cluster", "kafka-cluster", "Alter")]
        }
        ApiKey::WriteTxnMarkers => vec![("Cluster", "kafka-cluster", "ClusterAction")],
        ApiKey::DescribeClientQuotas => vec![("Cluster", "kafka-cluster", "DescribeConfigs")],
        ApiKey::AlterClientQuotas => vec![("Cluster", "kafka-cluster", "AlterConfigs")],
        other => panic!("no authorization case for {other:?}: add one to tests/it/authz.rs"),
    }
}

/// What the admin makes before `api` is denied: state the denial must not reveal or change.
async fn prepare(h: &Harness, api: ApiKey) {
    match api {
        ApiKey::ListTransactions => {
            h.init_producer(ADMIN, "list-txn").await;
        }
        ApiKey::OffsetFetch => h.commit("fetch-offsets", "fetch-offsets").await,
        ApiKey::ListGroups => h.commit("listed", "commit").await,
        ApiKey::DeleteGroups => h.commit("delete-groups", "commit").await,
        ApiKey::OffsetDelete => h.commit("offset-delete", "offset-delete").await,
        ApiKey::DeleteAcls => {
            let created = h.call(ADMIN, &create_acl("acl-deleted"), 3).await;
            assert_eq!(created.results[0].error_code, NONE);
        }
        _ => {}
    }
}

/// Calls `api` as alice with no ACL: Kafka's error code, asserted exactly.
async fn deny(h: &Harness, api: ApiKey) {
    match api {
        ApiKey::Produce => {
            let response = h.call(ALICE, &produce_request("produce", &["x"]), 9).await;
            assert_eq!(response.responses[0].partition_responses[0].error_code, TOPIC_DENIED);
            // Checked before existence: a topic that does not exist is refused the same way.
            let response = h.call(ALICE, &produce_request("no-such-topic", &["x"]), 9).await;
            assert_eq!(response.responses[0].partition_responses[0].error_code, TOPIC_DENIED);
        }
        ApiKey::Fetch => {
            let response = h.call(ALICE, &fetch_request("fetch"), 12).await;
            let partition = &response.responses[0].partitions[0];
            assert_eq!(partition.error_code, TOPIC_DENIED);
            assert_eq!(partition.high_watermark, -1);
            assert!(partition.records.as_ref().is_none_or(Bytes::is_empty), "no records");
        }
        ApiKey::ListOffsets => {
            let response = h.call(ALICE, &list_offsets("list-offsets"), 7).await;
            let partition = &response.topics[0].partitions[0];
            assert_eq!((partition.error_code, partition.offset), (TOPIC_DENIED, -1));
        }
        ApiKey::Metadata => {
            let response = h.call(ALICE, &metadata_request(Some(&["metadata"])), 12).await;
            assert_eq!(response.topics[0].error_code, TOPIC_DENIED);
            assert!(response.topics[0].partitions.is_empty());
        }
        ApiKey::CreateTopics => {
            let response = h.call(ALICE, &create_topics("create-topics"), 7).await;
            assert_eq!(response.topics[0].error_code, TOPIC_DENIED);
        }
        ApiKey::DeleteTopics => {
            let request =
                DeleteTopicsRequest::default().with_topic_names(vec![topic("delete-topics")]);
            let response = h.call(ALICE, &request, 5).await;
            assert_eq!(response.responses[0].error_code, TOPIC_DENIED);
        }
        ApiKey::DeleteRecords => {
            let response = h.call(ALICE, &delete_records("delete-records"), 2).await;
            let partition = &response.topics[0].partitions[0];
            assert_eq!((partition.error_code, partition.low_watermark), (TOPIC_DENIED, -1));
        }
        ApiKey::OffsetForLeaderEpoch => {
            let response = h.call(ALICE, &leader_epoch("epoch"), 4).await;
            let partition = &response.topics[0].partitions[0];
            assert_eq!((partition.error_code, partition.end_offset), (TOPIC_DENIED, -1));
        }
        ApiKey::DescribeConfigs => {
            let response = h.call(ALICE, &describe_configs("describe-configs"), 4).await;
            let codes: Vec<i16> = response.results.iter().map(|r| r.error_code).collect();
            assert_eq!(codes, [TOPIC_DENIED, CLUSTER_DENIED]);
            assert!(response.results.iter().all(|r| r.configs.is_empty()));
        }
        ApiKey::AlterConfigs => {
            let response = h.call(ALICE, &alter_configs("alter-configs"), 2).await;
            assert_eq!(response.responses[0].error_code, TOPIC_DENIED);
        }
        ApiKey::CreatePartitions => {
            let response = h.call(ALICE, &create_partitions("create-partitions"), 3).await;
            assert_eq!(response.results[0].error_code, TOPIC_DENIED);
        }
        ApiKey::IncrementalAlterConfigs => {
            let request = incremental_alter_configs("incremental-alter-configs");
            let response = h.call(ALICE, &request, 1).await;
            assert_eq!(response.responses[0].error_code, TOPIC_DENIED);
        }
        ApiKey::DescribeQuorum => {
            let request = crate::protocol::describe_quorum_request();
            let response = h.call(ALICE, &request, 2).await;
            assert_eq!(response.error_code, CLUSTER_DENIED);
        }
        ApiKey::UnregisterBroker => {
            let request = UnregisterBrokerRequest::default().with_broker_id(BrokerId(7));
            let response = h.call(ALICE, &request, 0).await;
            assert_eq!(response.error_code, CLUSTER_DENIED);
        }
        ApiKey::ElectLeaders => {
            let request = kafka_protocol::messages::ElectLeadersRequest::default();
            let response = h.call(ALICE, &request, 2).await;
            assert_eq!(response.error_code, CLUSTER_DENIED);
        }
        ApiKey::AlterPartitionReassignments => {
            let response = h.call(ALICE, &reassign_request(), 1).await;
            assert_eq!(response.error_code, CLUSTER_DENIED);
            assert_eq!(response.responses[0].partitions[0].error_code, CLUSTER_DENIED);
        }
        ApiKey::ListPartitionReassignments => {
            let request = kafka_protocol::messages::ListPartitionReassignmentsRequest::default();
            let response = h.call(ALICE, &request, 0).await;
            assert_eq!(response.error_code, CLUSTER_DENIED);
        }
        ApiKey::WriteTxnMarkers => {
            let response = h.call(ALICE, &write_markers("write-markers"), 1).await;
            assert_eq!(response.markers[0].topics[0].partitions[0].error_code, CLUSTER_DENIED);
        }
        ApiKey::DescribeCluster => {
            let request =
                DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
            let response = h.call(ALICE, &request, 1).await;
            // Kafka answers; without DESCRIBE on the cluster its operations are none.
            assert_eq!((response.error_code, response.cluster_authorized_operations), (NONE, 0));
        }
        ApiKey::InitProducerId => {
            let request = InitProducerIdRequest::default()
                .with_transactional_id(Some(tid("init-pid")))
                .with_transaction_timeout_ms(60_000);
            let response = h.call(ALICE, &request, 4).await;
            assert_eq!((response.error_code, response.producer_id.0), (TXN_ID_DENIED, -1));
            let idempotent = InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000);
            let response = h.call(ALICE, &idempotent, 4).await;
            assert_eq!((response.error_code, response.producer_id.0), (CLUSTER_DENIED, -1));
        }
        ApiKey::AddPartitionsToTxn => {
            let request = add_partitions("add-partitions", (0, 0), "add-partitions");
            let response = h.call(ALICE, &request, 3).await;
            let partition = &response.results_by_topic_v3_and_below[0].results_by_partition[0];
            assert_eq!(partition.partition_error_code, TXN_ID_DENIED);
        }
        ApiKey::AddOffsetsToTxn => {
            let response =
                h.call(ALICE, &add_offsets("add-offsets", (0, 0), "add-offsets"), 3).await;
            assert_eq!(response.error_code, TXN_ID_DENIED);
        }
        ApiKey::EndTxn => {
            let response = h.call(ALICE, &end_txn("end-txn", (0, 0)), 3).await;
            assert_eq!(response.error_code, TXN_ID_DENIED);
        }
        ApiKey::TxnOffsetCommit => {
            let response =
                h.call(ALICE, &txn_offset_commit("txn-commit", (0, 0), "txn-commit"), 3).await;
            assert_eq!(response.topics[0].partitions[0].error_code, TXN_ID_DENIED);
        }
        ApiKey::DescribeTransactions => {
            let request = DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![tid("describe-txn")]);
            let response = h.call(ALICE, &request, 0).await;
            assert_eq!(response.transaction_states[0].error_code, TXN_ID_DENIED);
        }
        ApiKey::ListTransactions => {
            // The admin sees the transaction; alice, without DESCRIBE on it, does not.
            let admin = h.call(ADMIN, &ListTransactionsRequest::default(), 1).await;
            assert!(
                admin
                    .transaction_states
                    .iter()
                    .any(|t| t.transactional_id.0.as_str() == "list-txn")
            );
            let response = h.call(ALICE, &ListTransactionsRequest::default(), 1).await;
            assert_eq!(response.error_code, NONE);
            assert!(response.transaction_states.is_empty(), "{:?}", response.transaction_states);
        }
        ApiKey::DescribeProducers => {
            let response = h.call(ALICE, &describe_producers("describe-producers"), 0).await;
            assert_eq!(response.topics[0].partitions[0].error_code, TOPIC_DENIED);
        }
        ApiKey::FindCoordinator => {
            let response = h.call(ALICE, &find_coordinator(0, "find-group"), 4).await;
            assert_eq!(response.coordinators[0].error_code, GROUP_DENIED);
            let response = h.call(ALICE, &find_coordinator(1, "find-txn"), 4).await;
            assert_eq!(response.coordinators[0].error_code, TXN_ID_DENIED);
            let v3 = FindCoordinatorRequest::default().with_key(s("find-group"));
            let response = h.call(ALICE, &v3, 3).await;
            assert_eq!((response.error_code, response.node_id.0), (GROUP_DENIED, -1));
        }
        ApiKey::JoinGroup => {
            let response = h.call(ALICE, &join_request("join"), 3).await;
            assert_eq!((response.error_code, response.generation_id), (GROUP_DENIED, -1));
            assert!(response.member_id.is_empty());
        }
        ApiKey::SyncGroup => {
            let request =
                SyncGroupRequest::default().with_group_id(gid("sync")).with_member_id(s("m"));
            assert_eq!(h.call(ALICE, &request, 3).await.error_code, GROUP_DENIED);
        }
        ApiKey::Heartbeat => {
            let request =
                HeartbeatRequest::default().with_group_id(gid("heartbeat")).with_member_id(s("m"));
            assert_eq!(h.call(ALICE, &request, 3).await.error_code, GROUP_DENIED);
        }
        ApiKey::LeaveGroup => {
            let request = LeaveGroupRequest::default()
                .with_group_id(gid("leave"))
                .with_members(vec![MemberIdentity::default().with_member_id(s("m"))]);
            let response = h.call(ALICE, &request, 3).await;
            assert_eq!(response.error_code, GROUP_DENIED);
            assert!(response.members.is_empty());
        }
        ApiKey::OffsetCommit => {
            let response = h.call(ALICE, &offset_commit("commit", "commit"), 8).await;
            assert_eq!(response.topics[0].partitions[0].error_code, GROUP_DENIED);
        }
        ApiKey::OffsetFetch => {
            let response = h.call(ALICE, &offset_fetch("fetch-offsets"), 8).await;
            assert_eq!(response.groups[0].error_code, GROUP_DENIED);
            assert!(response.groups[0].topics.is_empty());
        }
        ApiKey::ListGroups => {
            let response = h.call(ALICE, &ListGroupsRequest::default(), 4).await;
            assert_eq!(response.error_code, NONE);
            assert!(response.groups.is_empty(), "{:?}", response.groups);
        }
        ApiKey::DescribeGroups => {
            let response = h.call(ALICE, &describe_groups("describe-groups"), 5).await;
            let group = &response.groups[0];
            assert_eq!((group.error_code, group.authorized_operations), (GROUP_DENIED, i32::MIN));
        }
        ApiKey::DeleteGroups => {
            let request =
                DeleteGroupsRequest::default().with_groups_names(vec![gid("delete-groups")]);
            let response = h.call(ALICE, &request, 2).await;
            assert_eq!(response.results[0].error_code, GROUP_DENIED);
        }
        ApiKey::OffsetDelete => {
            let response = h.call(ALICE, &offset_delete("offset-delete"), 0).await;
            assert_eq!(response.error_code, GROUP_DENIED);
        }
        ApiKey::ConsumerGroupHeartbeat => {
            let response = h.call(ALICE, &cg_heartbeat("cg-heartbeat"), 0).await;
            assert_eq!((response.error_code, response.member_id.as_ref()), (GROUP_DENIED, None));
        }
        ApiKey::ConsumerGroupDescribe => {
            let response = h.call(ALICE, &cg_describe("cg-describe"), 0).await;
            let group = &response.groups[0];
            assert_eq!((group.error_code, group.authorized_operations), (GROUP_DENIED, i32::MIN));
        }
        ApiKey::AlterReplicaLogDirs => {
            let (_, b) = Harness::dirs(&h.dir);
            let response = h.call(ALICE, &alter_log_dirs(&b, "alter-dirs"), 2).await;
            assert_eq!(response.results[0].partitions[0].error_code, CLUSTER_DENIED);
        }
        ApiKey::DescribeLogDirs => {
            let response = h.call(ALICE, &DescribeLogDirsRequest::default(), 4).await;
            assert_eq!(response.error_code, CLUSTER_DENIED);
            assert!(response.results.is_empty());
        }
        ApiKey::CreateAcls => {
            let response = h.call(ALICE, &create_acl("acl-created"), 3).await;
            assert_eq!(response.results[0].error_code, CLUSTER_DENIED);
        }
        ApiKey::DescribeAcls => {
            let response = h.call(ALICE, &every_acl(), 3).await;
            assert_eq!(response.error_code, CLUSTER_DENIED);
            assert!(response.resources.is_empty());
        }
        ApiKey::DeleteAcls => {
            let response = h.call(ALICE, &delete_acl("acl-deleted"), 3).await;
            assert_eq!(response.filter_results[0].error_code, CLUSTER_DENIED);
        }
        ApiKey::DescribeUserScramCredentials => {
            let request = DescribeUserScramCredentialsRequest::default().with_users(None);
            let response = h.call(ALICE, &request, 0).await;
            assert_eq!(response.error_code, CLUSTER_DENIED);
        }
        ApiKey::AlterUserScramCredentials => {
            let response = h.call(ALICE, &upsert_scram("carol"), 0).await;
            assert_eq!(response.results[0].error_code, CLUSTER_DENIED);
        }
        ApiKey::DescribeClientQuotas => {
            let response = h.call(ALICE, &DescribeClientQuotasRequest::default(), 1).await;
            assert_eq!(response.error_code, CLUSTER_DENIED);
        }
        ApiKey::AlterClientQuotas => {
            let response = h.call(ALICE, &alter_quota("dave"), 1).await;
            assert_eq!(response.entries[0].error_code, CLUSTER_DENIED);
        }
        other => panic!("no denial case for {other:?}"),
    }
}

/// Calls `api` as alice with `grants(api)` alone: it succeeds.
async fn allow(h: &Harness, api: ApiKey) {
    match api {
        ApiKey::Produce => {
            let response = h.call(ALICE, &produce_request("produce", &["x"]), 9).await;
            let partition = &response.responses[0].partition_responses[0];
            assert_eq!((partition.error_code, partition.base_offset), (NONE, 0));
        }
        ApiKey::Fetch => {
            let response = h.call(ALICE, &fetch_request("fetch"), 12).await;
            let partition = &response.responses[0].partitions[0];
            assert_eq!((partition.error_code, partition.high_watermark), (NONE, 1));
            assert_eq!(
                crate::common::records(partition.records.as_deref().unwrap_or_default()).len(),
                1
            );
        }
        ApiKey::ListOffsets => {
            let response = h.call(ALICE, &list_offsets("list-offsets"), 7).await;
            let partition = &response.topics[0].partitions[0];
            assert_eq!((partition.error_code, partition.offset), (NONE, 1));
        }
        ApiKey::Metadata => {
            let response = h.call(ALICE, &metadata_request(Some(&["metadata"])), 12).await;
            assert_eq!(
                (response.topics[0].error_code, response.topics[0].partitions.len()),
                (NONE, 1)
            );
        }
        ApiKey::CreateTopics => {
            let response = h.call(ALICE, &create_topics("create-topics"), 7).await;
            let created = &response.topics[0];
            assert_eq!(created.error_code, NONE);
            // Created; but without DESCRIBE_CONFIGS, Kafka tells neither its configs nor counts.
            assert_eq!(created.topic_config_error_code, TOPIC_DENIED);
            assert_eq!(created.num_partitions, -1);
            assert!(h.server().broker().manager().topics().contains(&"create-topics".to_owned()));
        }
        ApiKey::DeleteTopics => {
            let request =
                DeleteTopicsRequest::default().with_topic_names(vec![topic("delete-topics")]);
            let response = h.call(ALICE, &request, 5).await;
            assert_eq!(response.responses[0].error_code, NONE);
            assert!(!h.server().broker().manager().topics().contains(&"delete-topics".to_owned()));
        }
        ApiKey::DeleteRecords => {
            let response = h.call(ALICE, &delete_records("delete-records"), 2).await;
            let partition = &response.topics[0].partitions[0];
            assert_eq!((partition.error_code, partition.low_watermark), (NONE, 1));
        }
        ApiKey::OffsetForLeaderEpoch => {
            let response = h.call(ALICE, &leader_epoch("epoch"), 4).await;
            assert_eq!(response.topics[0].partitions[0].error_code, NONE);
        }
        ApiKey::DescribeConfigs => {
            let response = h.call(ALICE, &describe_configs("describe-configs"), 4).await;
            let codes: Vec<i16> = response.results.iter().map(|r| r.error_code).collect();
            assert_eq!(codes, [NONE, NONE]);
            assert!(response.results.iter().all(|r| !r.configs.is_empty()));
        }
        ApiKey::AlterConfigs => {
            let response = h.call(ALICE, &alter_configs("alter-configs"), 2).await;
            assert_eq!(response.responses[0].error_code, NONE);
            let overrides = h.server().broker().manager().topic_overrides("alter-configs");
            assert_eq!(overrides.get("retention.ms").map(String::as_str), Some("1234"));
        }
        ApiKey::CreatePartitions => {
            let response = h.call(ALICE, &create_partitions("create-partitions"), 3).await;
            assert_eq!(response.results[0].error_code, NONE);
            let counts = h.server().broker().manager().topic_partition_counts();
            assert_eq!(counts.get("create-partitions"), Some(&2));
        }
        ApiKey::IncrementalAlterConfigs => {
            let request = incremental_alter_configs("incremental-alter-configs");
            let response = h.call(ALICE, &request, 1).await;
            assert_eq!(response.responses[0].error_code, NONE);
            let overrides =
                h.server().broker().manager().topic_overrides("incremental-alter-configs");
            assert_eq!(overrides.get("retention.ms").map(String::as_str), Some("4321"));
        }
        ApiKey::UnregisterBroker => {
            let request = UnregisterBrokerRequest::default().with_broker_id(BrokerId(7));
            let response = h.call(ALICE, &request, 0).await;
            // Allowed, and answered: a single node keeps no registrations.
            assert_eq!(response.error_code, 102);
        }
        ApiKey::ElectLeaders => {
            let request = kafka_protocol::messages::ElectLeadersRequest::default();
            let response = h.call(ALICE, &request, 2).await;
            // Allowed: every partition asked, none needs an election on a single node.
            assert_eq!(response.error_code, NONE);
            assert!(response.replica_election_results.is_empty());
        }
        ApiKey::AlterPartitionReassignments => {
            let response = h.call(ALICE, &reassign_request(), 1).await;
            // Allowed, and answered: there is no such partition.
            assert_eq!(response.error_code, NONE);
            assert_eq!(response.responses[0].partitions[0].error_code, 3);
        }
        ApiKey::ListPartitionReassignments => {
            let request = kafka_protocol::messages::ListPartitionReassignmentsRequest::default();
            let response = h.call(ALICE, &request, 0).await;
            assert_eq!((response.error_code, response.topics.len()), (NONE, 0));
        }
        ApiKey::WriteTxnMarkers => {
            let response = h.call(ALICE, &write_markers("write-markers"), 1).await;
            assert_eq!(response.markers[0].topics[0].partitions[0].error_code, NONE);
            // The marker is in the log: one control batch, one offset.
            let log = h
                .server()
                .broker()
                .manager()
                .get_log(&TopicPartition { topic: "write-markers".to_owned(), partition: 0 })
                .expect("log");
            assert_eq!(log.log_end_offset().expect("end"), 1);
        }
        ApiKey::DescribeQuorum => {
            let request = crate::protocol::describe_quorum_request();
            let response = h.call(ALICE, &request, 2).await;
            // Allowed, and answered: a single node has no quorum partition.
            assert_eq!(
                (response.error_code, response.topics[0].partitions[0].error_code),
                (NONE, 3)
            );
        }
        ApiKey::DescribeCluster => {
            let request =
                DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
            let response = h.call(ALICE, &request, 1).await;
            // DESCRIBE (code 8) alone.
            assert_eq!(
                (response.error_code, response.cluster_authorized_operations),
                (NONE, 1 << 8)
            );
        }
        ApiKey::InitProducerId => {
            assert!(h.init_producer(ALICE, "init-pid").await.0 >= 0);
            let idempotent = InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000);
            let response = h.call(ALICE, &idempotent, 4).await;
            assert_eq!(response.error_code, NONE);
            assert!(response.producer_id.0 >= 0);
        }
        ApiKey::AddPartitionsToTxn => {
            let producer = h.init_producer(ALICE, "add-partitions").await;
            let request = add_partitions("add-partitions", producer, "add-partitions");
            let response = h.call(ALICE, &request, 3).await;
            let partition = &response.results_by_topic_v3_and_below[0].results_by_partition[0];
            assert_eq!(partition.partition_error_code, NONE);
        }
        ApiKey::AddOffsetsToTxn => {
            let producer = h.init_producer(ALICE, "add-offsets").await;
            let response =
                h.call(ALICE, &add_offsets("add-offsets", producer, "add-offsets"), 3).await;
            assert_eq!(response.error_code, NONE);
        }
        ApiKey::EndTxn => {
            let producer = h.init_producer(ALICE, "end-txn").await;
            let response = h.call(ALICE, &add_partitions("end-txn", producer, "end-txn"), 3).await;
            assert_eq!(
                response.results_by_topic_v3_and_below[0].results_by_partition[0]
                    .partition_error_code,
                NONE
            );
            assert_eq!(h.call(ALICE, &end_txn("end-txn", producer), 3).await.error_code, NONE);
        }
        ApiKey::TxnOffsetCommit => {
            let producer = h.init_producer(ALICE, "txn-commit").await;
            let response =
                h.call(ALICE, &add_offsets("txn-commit", producer, "txn-commit"), 3).await;
            assert_eq!(response.error_code, NONE);
            let response =
                h.call(ALICE, &txn_offset_commit("txn-commit", producer, "txn-commit"), 3).await;
            assert_eq!(response.topics[0].partitions[0].error_code, NONE);
        }
        ApiKey::DescribeTransactions => {
            h.init_producer(ADMIN, "describe-txn").await;
            let request = DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![tid("describe-txn")]);
            let response = h.call(ALICE, &request, 0).await;
            assert_eq!(response.transaction_states[0].error_code, NONE);
            assert_eq!(response.transaction_states[0].transaction_state.as_str(), "Empty");
        }
        ApiKey::ListTransactions => {
            let response = h.call(ALICE, &ListTransactionsRequest::default(), 1).await;
            let ids: Vec<&str> =
                response.transaction_states.iter().map(|t| t.transactional_id.0.as_str()).collect();
            assert_eq!(ids, ["list-txn"]);
        }
        ApiKey::DescribeProducers => {
            let response = h.call(ALICE, &describe_producers("describe-producers"), 0).await;
            let partition = &response.topics[0].partitions[0];
            assert_eq!(partition.error_code, NONE);
            assert_eq!(partition.active_producers.len(), 1);
        }
        ApiKey::FindCoordinator => {
            let response = h.call(ALICE, &find_coordinator(0, "find-group"), 4).await;
            assert_eq!(response.coordinators[0].error_code, NONE);
            let response = h.call(ALICE, &find_coordinator(1, "find-txn"), 4).await;
            assert_eq!(response.coordinators[0].error_code, NONE);
            let v3 = FindCoordinatorRequest::default().with_key(s("find-group"));
            assert_eq!(h.call(ALICE, &v3, 3).await.error_code, NONE);
        }
        ApiKey::JoinGroup => {
            let (member, generation) = h.join("join", false).await;
            assert!(!member.is_empty() && generation >= 1);
        }
        ApiKey::SyncGroup => {
            h.join("sync", true).await;
        }
        ApiKey::Heartbeat => {
            let (member, generation) = h.join("heartbeat", true).await;
            let request = HeartbeatRequest::default()
                .with_group_id(gid("heartbeat"))
                .with_generation_id(generation)
                .with_member_id(member);
            assert_eq!(h.call(ALICE, &request, 3).await.error_code, NONE);
        }
        ApiKey::LeaveGroup => {
            let (member, _) = h.join("leave", false).await;
            let request = LeaveGroupRequest::default()
                .with_group_id(gid("leave"))
                .with_members(vec![MemberIdentity::default().with_member_id(member)]);
            let response = h.call(ALICE, &request, 3).await;
            assert_eq!((response.error_code, response.members[0].error_code), (NONE, NONE));
        }
        ApiKey::OffsetCommit => {
            let response = h.call(ALICE, &offset_commit("commit", "commit"), 8).await;
            assert_eq!(response.topics[0].partitions[0].error_code, NONE);
        }
        ApiKey::OffsetFetch => {
            let response = h.call(ALICE, &offset_fetch("fetch-offsets"), 8).await;
            let group = &response.groups[0];
            assert_eq!(group.error_code, NONE);
            let partition = &group.topics[0].partitions[0];
            assert_eq!((partition.error_code, partition.committed_offset), (NONE, 1));
        }
        ApiKey::ListGroups => {
            let response = h.call(ALICE, &ListGroupsRequest::default(), 4).await;
            let ids: Vec<&str> = response.groups.iter().map(|g| g.group_id.0.as_str()).collect();
            assert_eq!(ids, ["listed"]);
        }
        ApiKey::DescribeGroups => {
            let response = h.call(ALICE, &describe_groups("describe-groups"), 5).await;
            let group = &response.groups[0];
            assert_eq!((group.error_code, group.authorized_operations), (NONE, 1 << 8));
        }
        ApiKey::DeleteGroups => {
            let request =
                DeleteGroupsRequest::default().with_groups_names(vec![gid("delete-groups")]);
            let response = h.call(ALICE, &request, 2).await;
            assert_eq!(response.results[0].error_code, NONE);
        }
        ApiKey::OffsetDelete => {
            let response = h.call(ALICE, &offset_delete("offset-delete"), 0).await;
            assert_eq!(response.error_code, NONE);
            assert_eq!(response.topics[0].partitions[0].error_code, NONE);
        }
        ApiKey::ConsumerGroupHeartbeat => {
            let response = h.call(ALICE, &cg_heartbeat("cg-heartbeat"), 0).await;
            assert_eq!(response.error_code, NONE);
            assert!(response.member_epoch >= 1);
        }
        ApiKey::ConsumerGroupDescribe => {
            let joined = h.call(ADMIN, &cg_heartbeat("cg-describe"), 0).await;
            assert_eq!(joined.error_code, NONE);
            let response = h.call(ALICE, &cg_describe("cg-describe"), 0).await;
            let group = &response.groups[0];
            assert_eq!((group.error_code, group.authorized_operations), (NONE, 1 << 8));
        }
        ApiKey::AlterReplicaLogDirs => {
            let (_, b) = Harness::dirs(&h.dir);
            let response = h.call(ALICE, &alter_log_dirs(&b, "alter-dirs"), 2).await;
            assert_eq!(response.results[0].partitions[0].error_code, NONE);
        }
        ApiKey::DescribeLogDirs => {
            let response = h.call(ALICE, &DescribeLogDirsRequest::default(), 4).await;
            assert_eq!(response.error_code, NONE);
            assert_eq!(response.results.len(), 2);
        }
        ApiKey::CreateAcls => {
            let response = h.call(ALICE, &create_acl("acl-created"), 3).await;
            assert_eq!(response.results[0].error_code, NONE);
            let acls = h.call(ADMIN, &every_acl(), 3).await;
            assert!(acls.resources.iter().any(|r| r.resource_name.as_str() == "acl-created"));
        }
        ApiKey::DescribeAcls => {
            let response = h.call(ALICE, &every_acl(), 3).await;
            assert_eq!(response.error_code, NONE);
            // Alice's own grant, at least.
            assert!(response.resources.iter().any(|r| r.resource_name.as_str() == "kafka-cluster"));
        }
        ApiKey::DeleteAcls => {
            let created = h.call(ADMIN, &create_acl("acl-deleted"), 3).await;
            assert_eq!(created.results[0].error_code, NONE);
            let response = h.call(ALICE, &delete_acl("acl-deleted"), 3).await;
            let result = &response.filter_results[0];
            assert_eq!((result.error_code, result.matching_acls.len()), (NONE, 1));
        }
        ApiKey::DescribeUserScramCredentials => {
            let request = DescribeUserScramCredentialsRequest::default().with_users(None);
            assert_eq!(h.call(ALICE, &request, 0).await.error_code, NONE);
        }
        ApiKey::AlterUserScramCredentials => {
            let response = h.call(ALICE, &upsert_scram("carol"), 0).await;
            assert_eq!(response.results[0].error_code, NONE);
        }
        ApiKey::DescribeClientQuotas => {
            let response = h.call(ALICE, &DescribeClientQuotasRequest::default(), 1).await;
            assert_eq!(response.error_code, NONE);
        }
        ApiKey::AlterClientQuotas => {
            let response = h.call(ALICE, &alter_quota("dave"), 1).await;
            assert_eq!(response.entries[0].error_code, NONE);
        }
        other => panic!("no success case for {other:?}"),
    }
}

fn list_offsets(name: &str) -> ListOffsetsRequest {
    ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
        ListOffsetsTopic::default().with_name(topic(name)).with_partitions(vec![
            ListOffsetsPartition::default().with_partition_index(0).with_timestamp(-1),
        ]),
    ])
}

fn create_topics(name: &str) -> CreateTopicsRequest {
    CreateTopicsRequest::default().with_timeout_ms(5_000).with_topics(vec![
        CreatableTopic::default()
            .with_name(topic(name))
            .with_num_partitions(1)
            .with_replication_factor(1),
    ])
}

fn delete_records(name: &str) -> DeleteRecordsRequest {
    DeleteRecordsRequest::default().with_timeout_ms(5_000).with_topics(vec![
        DeleteRecordsTopic::default().with_name(topic(name)).with_partitions(vec![
            DeleteRecordsPartition::default().with_partition_index(0).with_offset(1),
        ]),
    ])
}

fn leader_epoch(name: &str) -> OffsetForLeaderEpochRequest {
    OffsetForLeaderEpochRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
        OffsetForLeaderTopic::default().with_topic(topic(name)).with_partitions(vec![
            OffsetForLeaderPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(-1)
                .with_leader_epoch(0),
        ]),
    ])
}

fn create_partitions(name: &str) -> CreatePartitionsRequest {
    CreatePartitionsRequest::default()
        .with_timeout_ms(5_000)
        .with_topics(vec![CreatePartitionsTopic::default().with_name(topic(name)).with_count(2)])
}

fn describe_producers(name: &str) -> DescribeProducersRequest {
    DescribeProducersRequest::default().with_topics(vec![
        TopicRequest::default().with_name(topic(name)).with_partition_indexes(vec![0]),
    ])
}

fn offset_fetch(group: &str) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default().with_group_id(gid(group)).with_topics(Some(vec![
            OffsetFetchRequestTopics::default()
                .with_name(topic(group))
                .with_partition_indexes(vec![0]),
        ])),
    ])
}

fn describe_groups(group: &str) -> DescribeGroupsRequest {
    DescribeGroupsRequest::default()
        .with_groups(vec![gid(group)])
        .with_include_authorized_operations(true)
}

fn offset_delete(group: &str) -> OffsetDeleteRequest {
    OffsetDeleteRequest::default().with_group_id(gid(group)).with_topics(vec![
        OffsetDeleteRequestTopic::default()
            .with_name(topic(group))
            .with_partitions(vec![OffsetDeleteRequestPartition::default().with_partition_index(0)]),
    ])
}

fn cg_describe(group: &str) -> ConsumerGroupDescribeRequest {
    ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![gid(group)])
        .with_include_authorized_operations(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_is_denied_without_acls_and_allowed_with_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = Harness { dir: dir.path().to_owned(), server: None };
    h.restart_with(&[]).await;
    for (name, records) in TOPICS {
        h.create_topic(name, 1);
        if records > 0 {
            h.produce(name, records).await;
        }
    }
    // A producer with state on `describe-producers` (DescribeProducers lists it).
    let idempotent = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000);
    let producer = h.call(ADMIN, &idempotent, 4).await;
    let mut builder = seglog_format::RecordBatchBuilder::new(Compression::None).producer(
        producer.producer_id.0,
        producer.producer_epoch,
        0,
    );
    builder.push(1_000, None, Some(b"p"), &[]).expect("record");
    let records = Bytes::from(builder.build().expect("batch"));
    let mut request = produce_request("describe-producers", &["unused"]);
    request.topic_data[0].partition_data[0].records = Some(records);
    let answer = h.call(ADMIN, &request, 9).await;
    assert_eq!(answer.responses[0].partition_responses[0].error_code, NONE);

    // The internal topics do not exist yet: FindCoordinator, first, must not create them.
    let mut order: Vec<ApiKey> = SUPPORTED_APIS.iter().map(|(key, ..)| *key).collect();
    order.sort_by_key(|key| *key != ApiKey::FindCoordinator);
    let checked: Vec<ApiKey> = order.into_iter().filter(|key| !UNCHECKED.contains(key)).collect();
    for &api in &checked {
        prepare(&h, api).await;
        let before = h.snapshot().await;
        deny(&h, api).await;
        assert_eq!(h.snapshot().await, before, "{api:?} denied changed the broker");
    }
    // The comparisons saw something: the fixtures are in the snapshot.
    let seen = h.snapshot().await;
    assert!(!seen.groups.is_empty() && !seen.offsets.is_empty(), "{seen:?}");
    assert!(!seen.transactions.is_empty() && !seen.replicas.is_empty(), "{seen:?}");
    for &api in &checked {
        h.restart_with(&grants(api)).await;
        allow(&h, api).await;
    }
    let unchecked = SUPPORTED_APIS.iter().filter(|(key, ..)| UNCHECKED.contains(key)).count();
    println!(
        "authorization matrix: {} APIs denied and allowed ({unchecked} unchecked)",
        checked.len()
    );
    assert_eq!(checked.len(), SUPPORTED_APIS.len() - unchecked);
    h.server.take().expect("running").shutdown().await.expect("shutdown");
}

/// Metadata does not reveal a topic without DESCRIBE: the all-topics form leaves it out, and
/// asked for by name it gets the same answer as a topic that does not exist (by id, the id
/// alone); auto-creation needs CREATE. Also the partial refusals of the matrix's APIs: a
/// transactional produce without WRITE on its transactional id, AddPartitionsToTxn and
/// OffsetCommit with one topic refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_reveals_no_topic_without_describe() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut h = Harness { dir: dir.path().to_owned(), server: None };
    h.restart_with(&[]).await;
    for name in ["visible", "hidden", "apt-ok"] {
        h.create_topic(name, 1);
    }
    h.restart_with(&[
        ("Topic", "visible", "Describe"),
        ("Topic", "auto", "Describe"),
        ("Topic", "auto-ok", "Describe"),
        ("Topic", "auto-ok", "Create"),
        ("Topic", "hidden", "Write"),
        ("TransactionalId", "apt", "Write"),
        ("Topic", "apt-ok", "Write"),
        ("Group", "oc", "Read"),
        ("Topic", "visible", "Read"),
    ])
    .await;
    // WRITE implies DESCRIBE ("hidden", "apt-ok"); alice has nothing on "secret".
    h.create_topic("secret", 1);
    let all = h.call(ALICE, &metadata_request(None), 12).await;
    let mut names: Vec<&str> =
        all.topics.iter().filter_map(|t| t.name.as_ref()).map(|n| n.0.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["apt-ok", "hidden", "visible"], "only the describable topics");
    let admin = h.call(ADMIN, &metadata_request(None), 12).await;
    assert_eq!(admin.topics.len(), 4, "the admin sees every topic");

    let secret = h.call(ALICE, &metadata_request(Some(&["secret"])), 12).await.topics.remove(0);
    let missing = h.call(ALICE, &metadata_request(Some(&["no-such"])), 12).await.topics.remove(0);
    assert_eq!(secret.error_code, TOPIC_DENIED);
    assert_eq!(secret.clone().with_name(None), missing.clone().with_name(None), "same answer");
    assert_eq!(missing.name.as_ref().map(|n| n.0.as_str()), Some("no-such"));

    let id = admin
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "secret"))
        .expect("secret")
        .topic_id;
    let by_id = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(None).with_topic_id(id)]));
    let answer = h.call(ALICE, &by_id, 12).await.topics.remove(0);
    assert_eq!((answer.error_code, answer.name.clone(), answer.topic_id), (TOPIC_DENIED, None, id));

    // Auto-creation: DESCRIBE without CREATE is refused and creates nothing.
    let create = |name: &str| {
        MetadataRequest::default()
            .with_allow_auto_topic_creation(true)
            .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(topic(name)))]))
    };
    let refused = h.call(ALICE, &create("auto"), 12).await;
    assert_eq!(refused.topics[0].error_code, TOPIC_DENIED);
    let created = h.call(ALICE, &create("auto-ok"), 12).await;
    assert_eq!(created.topics[0].error_code, NONE);
    let topics = h.server().broker().manager().topics();
    assert!(!topics.contains(&"auto".to_owned()) && topics.contains(&"auto-ok".to_owned()));

    // A transactional produce needs WRITE on its transactional id: every partition refused,
    // nothing appended, though alice may write the topic.
    let batch = seglog_format::RecordBatchBuilder::new(Compression::None)
        .producer(5, 0, 0)
        .transactional(true);
    let mut batch = batch;
    batch.push(1_000, None, Some(b"t"), &[]).expect("record");
    let mut request = produce_request("hidden", &["unused"]).with_transactional_id(Some(tid("tp")));
    request.topic_data[0].partition_data[0].records =
        Some(Bytes::from(batch.build().expect("batch")));
    let response = h.call(ALICE, &request, 9).await;
    assert_eq!(response.responses[0].partition_responses[0].error_code, TXN_ID_DENIED);
    let before = h.snapshot().await;
    assert_eq!(before.topics["hidden"], [(0, 0)], "nothing appended");

    // AddPartitionsToTxn: the refused topic is TOPIC_AUTHORIZATION_FAILED, the others not
    // attempted (OPERATION_NOT_ATTEMPTED); nothing is added.
    let producer = h.init_producer(ALICE, "apt").await;
    let mut request = add_partitions("apt", producer, "apt-ok");
    request.v3_and_below_topics.push(
        AddPartitionsToTxnTopic::default().with_name(topic("secret")).with_partitions(vec![0]),
    );
    let response = h.call(ALICE, &request, 3).await;
    let codes: BTreeMap<&str, i16> = response
        .results_by_topic_v3_and_below
        .iter()
        .map(|t| (t.name.0.as_str(), t.results_by_partition[0].partition_error_code))
        .collect();
    assert_eq!(codes, BTreeMap::from([("apt-ok", 55), ("secret", TOPIC_DENIED)]));
    let described = h
        .call(
            ADMIN,
            &DescribeTransactionsRequest::default().with_transactional_ids(vec![tid("apt")]),
            0,
        )
        .await;
    assert!(described.transaction_states[0].topics.is_empty(), "nothing added");

    // OffsetCommit with READ on the group and on one topic: the other is refused, not committed.
    let mut request = offset_commit("oc", "visible");
    request.topics.push(
        OffsetCommitRequestTopic::default().with_name(topic("secret")).with_partitions(vec![
            OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(1),
        ]),
    );
    let response = h.call(ALICE, &request, 8).await;
    let codes: Vec<i16> = response.topics.iter().map(|t| t.partitions[0].error_code).collect();
    assert_eq!(codes, [NONE, TOPIC_DENIED]);
    let offsets = h.snapshot().await.offsets;
    assert_eq!(offsets, [("oc".to_owned(), "visible".to_owned(), 0, 1)]);
    h.server.take().expect("running").shutdown().await.expect("shutdown");
}

/// AlterPartitionReassignments v1 cancelling `reassign`-0's reassignment.
fn reassign_request() -> kafka_protocol::messages::AlterPartitionReassignmentsRequest {
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    kafka_protocol::messages::AlterPartitionReassignmentsRequest::default().with_topics(vec![
        ReassignableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("reassign")))
            .with_partitions(vec![ReassignablePartition::default().with_partition_index(0)]),
    ])
}
