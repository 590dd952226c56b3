//! The one table of the APIs this broker serves (Kafka's `ApiKeys` with `KafkaApis.handle`'s
//! match): each entry's key, advertised version range, role and handler. Dispatch (`route`),
//! ApiVersions (`SUPPORTED_APIS`, `api_version_list`), the metrics label (`api_name`) and
//! `GROUP_APIS` and `TXN_APIS` all come from it, so an API is added in exactly one place.
//!
//! The ranges are what the handlers implement, within what the `kafka-protocol` crate encodes.
//! The maxima are what Kafka 4.1 advertises by default (versions its schemas mark
//! `latestVersionUnstable` are left out: OffsetCommit and OffsetFetch v10, InitProducerId v6,
//! whose request codecs in `kafka-protocol` 0.18 also lack their new fields); the minima stay
//! where old clients (kcat 1.7.1) need them.

use std::sync::Arc;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::messages::api_versions_response::ApiVersion;

use crate::Broker;
use crate::error::Error;
use crate::handlers::{self, groups, security};
use crate::request::{Reply, Request};

/// Who serves an API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The broker's own handlers (`handlers`).
    Broker,
    /// The group coordinator (`handlers::groups`).
    Coordinator,
    /// The transaction coordinator (`handlers::txn`, over `crate::txn`).
    Transaction,
    /// Authentication, ACLs, SCRAM credentials and quotas (`handlers::security`).
    Security,
}

/// One row of the table, without its handler (which the table's `route` match holds).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Api {
    pub(crate) key: ApiKey,
    pub(crate) min: i16,
    pub(crate) max: i16,
    /// The metrics label (Kafka's `ApiKeys.name`).
    pub(crate) name: &'static str,
    pub(crate) role: Role,
}

/// The table: `Role Key min..=max => |broker, request| handler call;`. Each entry becomes a row
/// of [`APIS`] and an arm of [`route`], whose body is the entry's handler call (it decodes the
/// body and awaits the handler as its shape needs).
macro_rules! apis {
    ($( $role:ident $key:ident $min:literal ..= $max:literal
        => |$broker:ident, $request:ident| $handler:expr; )*) => {
        /// Every served API, in the order ApiVersions lists them.
        pub(crate) const APIS: &[Api] = &[$(
            Api {
                key: ApiKey::$key,
                min: $min,
                max: $max,
                name: stringify!($key),
                role: Role::$role,
            },
        )*];

        /// Runs the handler of the request's API.
        pub(crate) async fn route(broker: &Arc<Broker>, request: &Request) -> Result<Reply, Error> {
            match request.api_key {
                $(ApiKey::$key => {
                    let ($broker, $request) = (broker, request);
                    $handler
                })*
                other => Err(Error::NotEnabled(other)),
            }
        }
    };
}

apis! {
    Broker Produce 3..=13 =>
        |broker, request| handlers::produce(broker, &request.session, request.decode()?, request.version).await;
    Broker Fetch 4..=18 =>
        |broker, request| handlers::fetch(broker, &request.session, request.decode()?, request.version).await;
    Broker ListOffsets 1..=10 =>
        |broker, request| handlers::list_offsets(broker, &request.session, request.decode()?, request.version).await;
    Broker Metadata 0..=13 =>
        |broker, request| handlers::metadata(broker, &request.session, request.decode()?, request.version).await;
    Broker ApiVersions 0..=4 => |_broker, request| {
        handlers::api_versions(&request.decode()?, request.version, api_version_list())
    };
    Broker CreateTopics 2..=7 =>
        |broker, request| handlers::create_topics(broker, &request.session, request.decode()?, request.version).await;
    Broker DeleteTopics 1..=6 =>
        |broker, request| handlers::delete_topics(broker, &request.session, request.decode()?, request.version).await;
    Broker DeleteRecords 0..=2 => |broker, request| {
        handlers::delete_records(broker, &request.session, request.decode()?, request.version).await
    };
    Broker OffsetForLeaderEpoch 2..=4 => |broker, request| {
        handlers::offset_for_leader_epoch(broker, &request.session, request.decode()?, request.version).await
    };
    Broker DescribeConfigs 1..=4 =>
        |broker, request| handlers::describe_configs(broker, &request.session, &request.decode()?, request.version);
    Broker AlterConfigs 0..=2 =>
        |broker, request| handlers::alter_configs(broker, &request.session, request.decode()?, request.version).await;
    Broker CreatePartitions 0..=3 => |broker, request| {
        handlers::create_partitions(broker, &request.session, request.decode()?, request.version).await
    };
    Broker IncrementalAlterConfigs 0..=1 => |broker, request| {
        handlers::incremental_alter_configs(broker, &request.session, request.decode()?, request.version).await
    };
    Broker DescribeCluster 0..=2 =>
        |broker, request| handlers::describe_cluster(broker, &request.session, &request.decode()?, request.version);
    Broker DescribeQuorum 0..=2 => |broker, request| {
        handlers::describe_quorum(broker, &request.session, request.decode()?, request.version).await
    };
    Broker ElectLeaders 0..=2 => |broker, request| {
        handlers::elect_leaders(broker, &request.session, request.decode()?, request.version).await
    };
    Broker AlterPartitionReassignments 0..=1 => |broker, request| {
        handlers::alter_partition_reassignments(broker, &request.session, request.decode()?, request.version).await
    };
    Broker ListPartitionReassignments 0..=0 =>
        |broker, request| handlers::list_partition_reassignments(broker, &request.session, &request.decode()?, request.version);
    Broker UnregisterBroker 0..=0 => |broker, request| {
        handlers::unregister_broker(broker, &request.session, &request.decode()?, request.version).await
    };
    Transaction InitProducerId 0..=5 => |broker, request| {
        handlers::init_producer_id(broker, &request.session, &request.decode()?, request.version).await
    };
    Transaction AddPartitionsToTxn 0..=5 => |broker, request| {
        handlers::add_partitions_to_txn(broker, &request.session, request.decode()?, request.version).await
    };
    Transaction AddOffsetsToTxn 0..=4 => |broker, request| {
        handlers::add_offsets_to_txn(broker, &request.session, request.decode()?, request.version).await
    };
    Transaction EndTxn 0..=5 =>
        |broker, request| handlers::end_txn(broker, &request.session, request.decode()?, request.version).await;
    Transaction TxnOffsetCommit 0..=5 => |broker, request| {
        handlers::txn_offset_commit(broker, &request.session, request.decode()?, request.version).await
    };
    Transaction DescribeTransactions 0..=0 => |broker, request| {
        handlers::describe_transactions(broker, &request.session, request.decode()?, request.version).await
    };
    Transaction ListTransactions 0..=2 => |broker, request| {
        handlers::list_transactions(broker, &request.session, request.decode()?, request.version).await
    };
    Transaction WriteTxnMarkers 1..=1 => |broker, request| {
        handlers::write_txn_markers(broker, &request.session, request.decode()?, request.version).await
    };
    Transaction DescribeProducers 0..=0 => |broker, request| {
        handlers::describe_producers(broker, &request.session, request.decode()?, request.version).await
    };
    Coordinator FindCoordinator 0..=6 => |broker, request| {
        groups::find_coordinator(broker, &request.session, request.decode()?, request.version).await
    };
    Coordinator JoinGroup 0..=9 => |broker, request| {
        groups::join_group(broker, request, request.decode()?, request.version).await
    };
    Coordinator SyncGroup 0..=5 =>
        |broker, request| groups::sync_group(broker, &request.session, request.decode()?, request.version).await;
    Coordinator Heartbeat 0..=4 =>
        |broker, request| groups::heartbeat(broker, &request.session, request.decode()?, request.version).await;
    Coordinator LeaveGroup 0..=5 =>
        |broker, request| groups::leave_group(broker, &request.session, request.decode()?, request.version).await;
    Coordinator OffsetCommit 2..=9 =>
        |broker, request| groups::offset_commit(broker, &request.session, request.decode()?, request.version).await;
    Coordinator OffsetFetch 1..=9 =>
        |broker, request| groups::offset_fetch(broker, &request.session, request.decode()?, request.version).await;
    Coordinator ListGroups 0..=5 =>
        |broker, request| groups::list_groups(broker, &request.session, &request.decode()?, request.version);
    Coordinator DescribeGroups 0..=6 =>
        |broker, request| groups::describe_groups(broker, &request.session, &request.decode()?, request.version);
    Coordinator DeleteGroups 0..=2 =>
        |broker, request| groups::delete_groups(broker, &request.session, request.decode()?, request.version).await;
    Coordinator OffsetDelete 0..=0 =>
        |broker, request| groups::offset_delete(broker, &request.session, request.decode()?, request.version).await;
    Coordinator ConsumerGroupHeartbeat 0..=1 => |broker, request| {
        groups::consumer_group_heartbeat(broker, request, request.decode()?, request.version).await
    };
    Coordinator ConsumerGroupDescribe 0..=1 => |broker, request| {
        groups::consumer_group_describe(broker, &request.session, &request.decode()?, request.version)
    };
    Broker AlterReplicaLogDirs 1..=2 => |broker, request| {
        handlers::alter_replica_log_dirs(broker, &request.session, request.decode()?, request.version).await
    };
    Broker DescribeLogDirs 1..=4 => |broker, request| {
        handlers::describe_log_dirs(broker, &request.session, request.decode()?, request.version).await
    };
    Security SaslHandshake 0..=1 => |_broker, request| security::sasl_handshake(request.version);
    Security SaslAuthenticate 0..=2 => |_broker, request| security::sasl_authenticate(request.version);
    Security CreateAcls 1..=3 => |broker, request| {
        security::create_acls(broker, &request.session, request.decode()?, request.version).await
    };
    Security DescribeAcls 1..=3 => |broker, request| {
        security::describe_acls(broker, &request.session, &request.decode()?, request.version)
    };
    Security DeleteAcls 1..=3 => |broker, request| {
        security::delete_acls(broker, &request.session, request.decode()?, request.version).await
    };
    Security DescribeUserScramCredentials 0..=0 => |broker, request| {
        security::describe_user_scram_credentials(
            broker,
            &request.session,
            &request.decode()?,
            request.version,
        )
    };
    Security AlterUserScramCredentials 0..=0 => |broker, request| {
        security::alter_user_scram_credentials(
            broker,
            &request.session,
            request.decode()?,
            request.version,
        )
        .await
    };
    Security DescribeClientQuotas 0..=1 => |broker, request| {
        security::describe_client_quotas(broker, &request.session, &request.decode()?, request.version)
    };
    Security AlterClientQuotas 0..=1 => |broker, request| {
        security::alter_client_quotas(broker, &request.session, request.decode()?, request.version)
            .await
    };
}

/// How many APIs have `role`.
const fn count(role: Role) -> usize {
    let mut n = 0;
    let mut idx = 0;
    while idx < APIS.len() {
        if APIS[idx].role as u8 == role as u8 {
            n += 1;
        }
        idx += 1;
    }
    n
}

/// The APIs this broker serves, with the versions it advertises: `(api key, min, max)`, from
/// [`APIS`].
pub const SUPPORTED_APIS: [(ApiKey, i16, i16); APIS.len()] = {
    let mut out = [(ApiKey::Produce, 0, 0); APIS.len()];
    let mut idx = 0;
    while idx < APIS.len() {
        out[idx] = (APIS[idx].key, APIS[idx].min, APIS[idx].max);
        idx += 1;
    }
    out
};

/// The keys of the APIs with `role`, in table order (`N` is `count(role)`).
const fn keys_of<const N: usize>(role: Role) -> [ApiKey; N] {
    let mut out = [ApiKey::Produce; N];
    let (mut idx, mut n) = (0, 0);
    while idx < APIS.len() {
        if APIS[idx].role as u8 == role as u8 {
            out[n] = APIS[idx].key;
            n += 1;
        }
        idx += 1;
    }
    out
}

/// The APIs the group coordinator serves (routed to `handlers::groups`), from [`APIS`].
pub const GROUP_APIS: [ApiKey; count(Role::Coordinator)] = keys_of(Role::Coordinator);

/// The APIs of transactions (routed to `handlers::txn`), from [`APIS`].
pub const TXN_APIS: [ApiKey; count(Role::Transaction)] = keys_of(Role::Transaction);

/// The table row of `api_key`, if it is served.
pub(crate) fn api(api_key: ApiKey) -> Option<&'static Api> {
    APIS.iter().find(|api| api.key == api_key)
}

/// The advertised version range of `api_key`, if it is served.
pub fn supported_versions(api_key: ApiKey) -> Option<(i16, i16)> {
    api(api_key).map(|api| (api.min, api.max))
}

/// The metrics label of an API: its name, or "other" for one not served.
pub(crate) fn api_name(api_key: ApiKey) -> &'static str {
    api(api_key).map_or("other", |api| api.name)
}

/// [`api_name`] of a raw key.
pub(crate) fn api_name_of(api_key: i16) -> &'static str {
    ApiKey::try_from(api_key).map_or("other", api_name)
}

/// The ApiVersions list: every served API with its range.
pub(crate) fn api_version_list() -> Vec<ApiVersion> {
    APIS.iter()
        .map(|api| {
            ApiVersion::default()
                .with_api_key(api.key as i16)
                .with_min_version(api.min)
                .with_max_version(api.max)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertised_ranges_are_within_the_codec() {
        for (key, min, max) in SUPPORTED_APIS {
            let codec = key.valid_versions();
            assert!(min >= codec.min && max <= codec.max, "{key:?} {min}..={max} vs {codec:?}");
            assert!(min <= max, "{key:?}");
            assert_eq!(APIS.iter().filter(|api| api.key == key).count(), 1, "{key:?} once");
        }
    }
}
