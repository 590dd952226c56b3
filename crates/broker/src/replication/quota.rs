//! `ReplicationQuota`: Kafka's `ReplicationQuotaManager`, the replication throttles that keep a
//! reassignment (or any catch-up) from taking a broker's whole bandwidth.
//!
//! - **Rates.** `leader.replication.throttled.rate` bounds the bytes a leader sends to its
//!   throttled followers, `follower.replication.throttled.rate` the bytes a follower fetches
//!   for its throttled replicas; both are dynamic broker keys, read from this broker's layer,
//!   then the cluster default, else unbounded (`Long.MAX`). A rate is Kafka's `SimpleRate` over
//!   `replication.quota.window.num` samples of `replication.quota.window.size.seconds`.
//! - **Throttled replicas.** A topic's `leader.replication.throttled.replicas` and
//!   `follower.replication.throttled.replicas` list `partition:broker` pairs (or `*` for all);
//!   a broker throttles the partitions listed with its own id (Kafka's
//!   `parseThrottledPartitions`). `kafka-reassign-partitions --throttle` writes the moving
//!   partitions' current replicas into the leader list and the new ones into the follower list.
//! - **Who is throttled.** Only replicas out of the ISR (a leader's view) or not caught up (a
//!   follower's): in-sync replication, and so `acks=all`, is never slowed. Over its rate a
//!   leader answers such a follower's partition without records, and a follower leaves such a
//!   partition out of its next fetch. Every byte of a throttled partition counts, in sync or
//!   not, as Kafka counts it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use seglog_storage::log::partition_log::TopicPartition;

use crate::security::quota::SampledRate;

/// The topic key listing the replicas throttled as leaders.
pub(crate) const LEADER_THROTTLED_REPLICAS: &str = "leader.replication.throttled.replicas";
/// The topic key listing the replicas throttled as followers.
pub(crate) const FOLLOWER_THROTTLED_REPLICAS: &str = "follower.replication.throttled.replicas";
/// The dynamic broker key of the leaders' rate, in bytes per second.
pub(crate) const LEADER_THROTTLED_RATE: &str = "leader.replication.throttled.rate";
/// The dynamic broker key of the followers' rate, in bytes per second.
pub(crate) const FOLLOWER_THROTTLED_RATE: &str = "follower.replication.throttled.rate";
/// The dynamic broker key of moves between log directories (accepted; seglog moves a replica
/// between its directories by copying files once, unthrottled).
pub(crate) const ALTER_LOG_DIRS_RATE: &str = "replica.alter.log.dirs.io.max.bytes.per.second";
/// The dynamic broker keys of Kafka's `QuotaConfig.brokerQuotaConfigs`.
pub(crate) const RATE_KEYS: [&str; 3] =
    [LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE, ALTER_LOG_DIRS_RATE];

/// Which partitions of a topic are throttled here.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Throttled {
    /// `*`: every partition.
    All,
    Partitions(BTreeSet<i32>),
}

/// One direction's throttle (Kafka's `ReplicationQuotaManager` of `LeaderReplication` or
/// `FollowerReplication`).
#[derive(Debug)]
pub(crate) struct ReplicationQuota {
    /// The bound in bytes per second; `u64::MAX` (Kafka's `Long.MAX`) is none.
    bound_bytes_per_second: AtomicU64,
    rate: Mutex<SampledRate>,
    throttled: RwLock<HashMap<String, Throttled>>,
    /// The metrics' label: `leader` or `follower`.
    side: &'static str,
}

impl ReplicationQuota {
    fn new(side: &'static str, window_num: u32, window_size_ms: u64) -> Self {
        Self {
            bound_bytes_per_second: AtomicU64::new(u64::MAX),
            rate: Mutex::new(SampledRate::new(window_num, window_size_ms)),
            throttled: RwLock::new(HashMap::new()),
            side,
        }
    }

    /// Kafka's `updateQuota(Quota.upperBound(rate))`.
    pub(crate) fn update_bound(&self, bytes_per_second: u64) {
        let before = self.bound_bytes_per_second.swap(bytes_per_second, Ordering::SeqCst);
        if before != bytes_per_second {
            tracing::info!(side = self.side, bytes_per_second, "replication throttle rate set");
        }
    }

    /// The bound in bytes per second (`u64::MAX`: none).
    pub(crate) fn bound(&self) -> u64 {
        self.bound_bytes_per_second.load(Ordering::SeqCst)
    }

    /// Whether `tp` is throttled on this broker in this direction.
    pub(crate) fn is_throttled(&self, tp: &TopicPartition) -> bool {
        let throttled = self.throttled.read().unwrap_or_else(PoisonError::into_inner);
        match throttled.get(&tp.topic) {
            None => false,
            Some(Throttled::All) => true,
            Some(Throttled::Partitions(partitions)) => partitions.contains(&tp.partition),
        }
    }

    /// Kafka's `isQuotaExceeded`: the measured rate is above the bound (a rate at the bound is
    /// acceptable).
    pub(crate) fn is_quota_exceeded(&self, now_ms: i64) -> bool {
        let bound = self.bound();
        if bound == u64::MAX {
            return false;
        }
        let measured = self.measure(now_ms);
        #[expect(clippy::cast_precision_loss, reason = "a rate bound in bytes per second")]
        let bound = bound as f64;
        measured > bound
    }

    /// The measured rate in bytes per second.
    pub(crate) fn measure(&self, now_ms: i64) -> f64 {
        let mut rate = self.rate.lock().unwrap_or_else(PoisonError::into_inner);
        rate.measure_simple(u64::try_from(now_ms).unwrap_or(0))
    }

    /// Kafka's `record`: counts `bytes` of throttled replication (never blocks).
    pub(crate) fn record(&self, bytes: usize, now_ms: i64) {
        if bytes == 0 {
            return;
        }
        #[expect(clippy::cast_precision_loss, reason = "byte counts far below 2^52")]
        let value = bytes as f64;
        let mut rate = self.rate.lock().unwrap_or_else(PoisonError::into_inner);
        rate.record(value, u64::try_from(now_ms).unwrap_or(0));
        drop(rate);
        ::metrics::counter!("seglog_replication_throttled_bytes_total", "side" => self.side)
            .increment(bytes as u64);
    }

    /// Takes every topic's list under `key` (Kafka's `TopicConfigHandler.updateThrottledList`):
    /// topics without it, or with it empty, are not throttled.
    fn set_topics(&self, configs: &BTreeMap<String, BTreeMap<String, String>>, key: &str, id: i32) {
        let next: HashMap<String, Throttled> = configs
            .iter()
            .filter_map(|(topic, overrides)| {
                let throttled = parse_throttled(overrides.get(key)?, id)?;
                Some((topic.clone(), throttled))
            })
            .collect();
        *self.throttled.write().unwrap_or_else(PoisonError::into_inner) = next;
    }
}

/// A throttled-replicas list as `broker_id` reads it (Kafka's `parseThrottledPartitions`):
/// `None` for an empty value, which throttles nothing.
fn parse_throttled(value: &str, broker_id: i32) -> Option<Throttled> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if value == "*" {
        return Some(Throttled::All);
    }
    let partitions = value
        .split(',')
        .filter_map(|item| {
            let (partition, broker) = item.trim().split_once(':')?;
            let broker: i32 = broker.trim().parse().ok()?;
            (broker == broker_id).then(|| partition.trim().parse().ok()).flatten()
        })
        .collect();
    Some(Throttled::Partitions(partitions))
}

/// Kafka's `ThrottledReplicaListValidator` for the topic key `name`: each item of the list
/// (split at commas, trimmed) is `partition:broker` or empty, or the whole list is `*`. The
/// error is Kafka's `ConfigException` text.
pub(crate) fn validate_throttled_replicas(name: &str, value: &str) -> Result<(), String> {
    let trimmed = value.trim();
    let items: Vec<&str> =
        if trimmed.is_empty() { Vec::new() } else { trimmed.split(',').map(str::trim).collect() };
    let replica = |item: &str| {
        item.is_empty()
            || item.split_once(':').is_some_and(|(p, b)| {
                !p.is_empty()
                    && !b.is_empty()
                    && p.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
            })
    };
    if items.iter().all(|item| replica(item)) || items.concat() == "*" {
        return Ok(());
    }
    Err(format!(
        "Invalid value [{}] for configuration {name}: {name} must be the literal '*' or a list \
         of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
        items.join(", ")
    ))
}

/// The leader's and the follower's throttles of this broker (Kafka's `QuotaManagers.leader`
/// and `.follower`).
#[derive(Debug)]
pub(crate) struct ReplicationQuotas {
    pub(crate) leader: ReplicationQuota,
    pub(crate) follower: ReplicationQuota,
}

impl ReplicationQuotas {
    /// Unbounded throttles over `window_num` samples of `window_size_ms`.
    pub(crate) fn new(window_num: u32, window_size_ms: u64) -> Self {
        Self {
            leader: ReplicationQuota::new("leader", window_num, window_size_ms),
            follower: ReplicationQuota::new("follower", window_num, window_size_ms),
        }
    }

    /// Takes the rates of the broker config layers (Kafka's `BrokerConfigHandler`): this
    /// broker's, else the cluster default's, else none. A value that is not a non-negative
    /// integer (validation refuses one) counts as unset.
    pub(crate) fn update_rates(
        &self,
        cluster_default: &BTreeMap<String, String>,
        per_broker: &BTreeMap<String, String>,
    ) {
        let rate = |key: &str| {
            [per_broker, cluster_default]
                .iter()
                .find_map(|layer| layer.get(key)?.trim().parse::<u64>().ok())
                .unwrap_or(u64::MAX)
        };
        self.leader.update_bound(rate(LEADER_THROTTLED_RATE));
        self.follower.update_bound(rate(FOLLOWER_THROTTLED_RATE));
    }

    /// Takes the throttled replicas of every topic's overrides, as `broker_id` reads them.
    pub(crate) fn update_topics(
        &self,
        configs: &BTreeMap<String, BTreeMap<String, String>>,
        broker_id: i32,
    ) {
        self.leader.set_topics(configs, LEADER_THROTTLED_REPLICAS, broker_id);
        self.follower.set_topics(configs, FOLLOWER_THROTTLED_REPLICAS, broker_id);
    }
}

#[cfg(test)]
mod tests {
    // Ported from Kafka's ReplicationQuotaManagerTest: shouldThrottleOnlyDefinedReplicas,
    // shouldExceedQuotaThenReturnBackBelowBoundAsTimePasses,
    // shouldSupportWildcardThrottledReplicas; DynamicConfigChangeTest:
    // shouldParseReplicationQuotaProperties, shouldParseWildcardReplicationQuotaProperties,
    // shouldParseReplicationQuotaReset, shouldParseRegardlessOfWhitespaceAroundValues;
    // LogConfigTest: shouldValidateThrottledReplicasConfig.
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition { topic: topic.to_owned(), partition }
    }

    fn topic_configs(
        topic: &str,
        key: &str,
        value: &str,
    ) -> BTreeMap<String, BTreeMap<String, String>> {
        BTreeMap::from([(topic.to_owned(), BTreeMap::from([(key.to_owned(), value.to_owned())]))])
    }

    #[test]
    fn only_the_listed_replicas_of_this_broker_are_throttled() {
        let quotas = ReplicationQuotas::new(11, 1000);
        let configs = topic_configs("topic1", LEADER_THROTTLED_REPLICAS, "1:101,2:101,3:101,4:102");
        quotas.update_topics(&configs, 101);
        for partition in 1..=3 {
            assert!(quotas.leader.is_throttled(&tp("topic1", partition)), "{partition}");
        }
        assert!(!quotas.leader.is_throttled(&tp("topic1", 4)), "broker 102's replica");
        assert!(!quotas.follower.is_throttled(&tp("topic1", 1)), "the follower list is unset");
        // Whitespace around the value is taken.
        for value in ["6:101", "6:101 ", " 6:101"] {
            quotas.update_topics(&topic_configs("topic1", LEADER_THROTTLED_REPLICAS, value), 101);
            assert!(quotas.leader.is_throttled(&tp("topic1", 6)), "{value:?}");
            assert!(!quotas.leader.is_throttled(&tp("topic1", 1)), "{value:?}");
        }
        quotas.update_topics(&topic_configs("topic1", LEADER_THROTTLED_REPLICAS, "* "), 101);
        assert!(quotas.leader.is_throttled(&tp("topic1", 1)), "a wildcard with a space");
        // An empty value, or none, removes the throttle.
        quotas.update_topics(&topic_configs("topic1", LEADER_THROTTLED_REPLICAS, ""), 101);
        assert!(!quotas.leader.is_throttled(&tp("topic1", 0)));
        quotas.update_topics(&topic_configs("topic1", LEADER_THROTTLED_REPLICAS, "0:101"), 101);
        quotas.update_topics(&BTreeMap::new(), 101);
        assert!(!quotas.leader.is_throttled(&tp("topic1", 0)), "a deleted topic's throttle goes");
    }

    #[test]
    fn a_wildcard_throttles_every_partition_of_its_topic_only() {
        let quotas = ReplicationQuotas::new(11, 1000);
        quotas.update_topics(&topic_configs("MyTopic", FOLLOWER_THROTTLED_REPLICAS, "*"), 7);
        assert!(quotas.follower.is_throttled(&tp("MyTopic", 0)));
        assert!(quotas.follower.is_throttled(&tp("MyTopic", 99)));
        assert!(!quotas.follower.is_throttled(&tp("MyOtherTopic", 0)));
        assert!(!quotas.leader.is_throttled(&tp("MyTopic", 0)));
    }

    /// Kafka's `shouldExceedQuotaThenReturnBackBelowBoundAsTimePasses`, step by step.
    #[test]
    fn the_quota_is_exceeded_then_back_below_its_bound_as_time_passes() {
        let quota = ReplicationQuota::new("leader", 10, 1000);
        quota.update_bound(100);
        let mut now = 1_000_000;
        assert!(!quota.is_quota_exceeded(now), "not broken when we start");
        now += 1500; // the first window is fixed: skip it, then half a window
        quota.record(1, now);
        assert!(!quota.is_quota_exceeded(now));
        quota.record(149, now); // 150 B in 1.5 s
        assert!(!quota.is_quota_exceeded(now));
        quota.record(1, now); // 151 B in 1.5 s
        assert!((quota.measure(now) - 151.0 / 1.5).abs() < 1e-9);
        assert!(quota.is_quota_exceeded(now));
        now += 500; // 151 B in 2 s
        assert!(!quota.is_quota_exceeded(now));
        assert!((quota.measure(now) - 151.0 / 2.0).abs() < 0.1);
        now += 500;
        quota.record(99, now); // 250 B in 2.5 s: at the bound, acceptable
        assert!((quota.measure(now) - 250.0 / 2.5).abs() < 1e-9);
        assert!(!quota.is_quota_exceeded(now));
        quota.record(1, now);
        assert!(quota.is_quota_exceeded(now));
        assert!((quota.measure(now) - 251.0 / 2.5).abs() < 1e-9);
        now += 2000;
        assert!(!quota.is_quota_exceeded(now));
        assert!((quota.measure(now) - 251.0 / 4.5).abs() < 1e-9);
    }

    #[test]
    fn no_rate_set_is_never_exceeded_and_the_broker_layer_comes_before_the_default() {
        let quotas = ReplicationQuotas::new(11, 1000);
        quotas.leader.record(1 << 30, 5000);
        assert!(!quotas.leader.is_quota_exceeded(5000), "unbounded by default");
        let default = BTreeMap::from([(LEADER_THROTTLED_RATE.to_owned(), "1000".to_owned())]);
        let own = BTreeMap::from([(LEADER_THROTTLED_RATE.to_owned(), "2000".to_owned())]);
        quotas.update_rates(&default, &own);
        assert_eq!(quotas.leader.bound(), 2000);
        assert_eq!(quotas.follower.bound(), u64::MAX);
        assert!(quotas.leader.is_quota_exceeded(5000));
        quotas.update_rates(&default, &BTreeMap::new());
        assert_eq!(quotas.leader.bound(), 1000);
        quotas.update_rates(&BTreeMap::new(), &BTreeMap::new());
        assert_eq!(quotas.leader.bound(), u64::MAX, "removed: unbounded again");
    }

    #[test]
    fn the_validator_takes_pairs_empty_items_and_the_wildcard_only() {
        let name = LEADER_THROTTLED_REPLICAS;
        for ok in [
            "*",
            "* ",
            "",
            " ",
            "100:10",
            "100:10,12:10",
            "100:10,12:10,15:1",
            "100:10,12:10,15:1  ",
            "100:0,",
        ] {
            assert_eq!(validate_throttled_replicas(name, ok), Ok(()), "{ok:?}");
        }
        let kafka = [
            "100",
            "100:",
            "100:0,10",
            "100:0,10:",
            "100:0,10:   ",
            "100 :0,10:   ",
            "100: 0,10:   ",
            "100:0,10 :   ",
            "*,100:10",
            "* ,100:10",
        ];
        for bad in kafka.into_iter().chain([":1", "-1:2", "0:1:2", "a:1"]) {
            let error = validate_throttled_replicas(name, bad).expect_err(bad);
            assert!(
                error.ends_with(
                    "must be the literal '*' or a list of replicas in the following format: \
                     [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                ),
                "{error}"
            );
        }
        assert_eq!(
            validate_throttled_replicas(name, "0:1, x").unwrap_err(),
            "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: \
             leader.replication.throttled.replicas must be the literal '*' or a list of \
             replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
        );
    }
}
