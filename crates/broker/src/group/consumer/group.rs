//! One KIP-848 group in memory (Kafka's `ConsumerGroup` and `ConsumerGroupMember`): the group
//! epoch, the members with their subscriptions, epochs and partitions, the target assignment
//! with its epoch, and the records last written. Pure data and rules; times are passed in.

use std::collections::{BTreeMap, BTreeSet};

use super::assignor::{ASSIGNORS, range, uniform};

/// A partition, by topic name.
pub(crate) type Partition = (String, i32);

/// One member (Kafka's `ConsumerGroupMember`).
#[derive(Debug, Clone)]
pub(crate) struct ConsumerMember {
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) member_epoch: i32,
    pub(crate) previous_member_epoch: i32,
    pub(crate) rebalance_timeout_ms: i32,
    pub(crate) subscribed_topics: BTreeSet<String>,
    /// A subscription by regular expression (KIP-848 v1), matched against whole topic names.
    pub(crate) subscribed_regex: Option<(String, regex::Regex)>,
    /// The topics it subscribes to now: the names, and the existing topics the pattern matches.
    pub(crate) resolved_topics: BTreeSet<String>,
    pub(crate) server_assignor: Option<String>,
    /// What the member owns, as far as the broker knows.
    pub(crate) assigned: BTreeSet<Partition>,
    /// Taken from it, not yet confirmed released.
    pub(crate) pending_revocation: BTreeSet<Partition>,
    /// Since when it has held partitions it must revoke.
    pub(crate) revoking_since_ms: Option<i64>,
    pub(crate) last_heartbeat_ms: i64,
    /// The assignment last sent to it (a heartbeat answer carries it only when it changes).
    pub(crate) sent_assignment: Option<BTreeSet<Partition>>,
}

impl ConsumerMember {
    /// A member that has just joined at epoch 0 and holds nothing; callers fill in what the
    /// member told.
    pub(crate) fn new(member_id: &str, now_ms: i64) -> Self {
        Self {
            member_id: member_id.to_owned(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            member_epoch: 0,
            previous_member_epoch: -1,
            rebalance_timeout_ms: -1,
            subscribed_topics: BTreeSet::new(),
            subscribed_regex: None,
            resolved_topics: BTreeSet::new(),
            server_assignor: None,
            assigned: BTreeSet::new(),
            pending_revocation: BTreeSet::new(),
            revoking_since_ms: None,
            last_heartbeat_ms: now_ms,
            sent_assignment: None,
        }
    }
}

/// A subscription pattern with its compiled form, which matches whole topic names only.
pub(crate) fn subscription_regex(pattern: &str) -> Result<(String, regex::Regex), regex::Error> {
    regex::Regex::new(&format!("^(?:{pattern})$")).map(|compiled| (pattern.to_owned(), compiled))
}

/// A KIP-848 group's membership (Kafka's `ConsumerGroup`).
#[derive(Debug, Clone, Default)]
pub(crate) struct ConsumerGroup {
    /// Bumped by every membership or subscription change.
    pub(crate) group_epoch: i32,
    /// The group epoch the target assignment was computed for.
    pub(crate) assignment_epoch: i32,
    pub(crate) members: BTreeMap<String, ConsumerMember>,
    pub(crate) target: BTreeMap<String, BTreeSet<Partition>>,
    /// Partition counts of the subscribed topics when last looked at.
    pub(crate) subscribed_metadata: BTreeMap<String, i32>,
    /// The group's live records in `__consumer_offsets` (key bytes to value bytes), as last
    /// written: the next write is the difference.
    pub(crate) persisted: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl ConsumerGroup {
    /// Kafka's consumer group states: Empty, Assigning (the target is behind the group
    /// epoch), Reconciling (some member is behind the target), Stable.
    pub(crate) fn state(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.assignment_epoch < self.group_epoch {
            "Assigning"
        } else if self.members.values().any(|member| {
            member.member_epoch != self.assignment_epoch
                || !member.pending_revocation.is_empty()
                || self.target.get(&member.member_id) != Some(&member.assigned)
        }) {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// The assignor the members prefer (the most common choice, else the default).
    pub(crate) fn assignor(&self) -> &'static str {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(name) = member.server_assignor.as_deref()
                && let Some(known) = ASSIGNORS.iter().find(|known| **known == name)
            {
                *votes.entry(known).or_default() += 1;
            }
        }
        votes.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0))).map_or(
            ASSIGNORS[0],
            |(name, _)| {
                ASSIGNORS.iter().copied().find(|known| *known == name).unwrap_or(ASSIGNORS[0])
            },
        )
    }

    /// Removes a member and its target; whether it was there.
    pub(crate) fn remove_member(&mut self, member_id: &str) -> bool {
        let removed = self.members.remove(member_id).is_some();
        if removed {
            self.target.remove(member_id);
        }
        removed
    }

    /// Recomputes the target assignment when the group epoch moved past it.
    pub(crate) fn maybe_compute_target(&mut self, partitions_of: &dyn Fn(&str) -> i32) {
        if self.assignment_epoch >= self.group_epoch {
            return;
        }
        self.target = match self.assignor() {
            "range" => range(&self.members, partitions_of),
            _ => uniform(&self.members, partitions_of),
        };
        self.assignment_epoch = self.group_epoch;
    }
}

/// Resolves each member's subscription against the topics there are now (a pattern matches
/// topics created since) and notes the partition counts; whether anything changed.
pub(in crate::group) fn refresh_subscriptions(
    consumer: &mut ConsumerGroup,
    topics: &BTreeMap<String, i32>,
) -> bool {
    let mut changed = false;
    for member in consumer.members.values_mut() {
        let mut resolved = member.subscribed_topics.clone();
        if let Some((_, pattern)) = &member.subscribed_regex {
            resolved.extend(
                topics
                    .keys()
                    .filter(|topic| !topic.starts_with("__") && pattern.is_match(topic))
                    .cloned(),
            );
        }
        if resolved != member.resolved_topics {
            member.resolved_topics = resolved;
            changed = true;
        }
    }
    let metadata: BTreeMap<String, i32> = consumer
        .members
        .values()
        .flat_map(|member| member.resolved_topics.iter())
        .map(|topic| (topic.clone(), topics.get(topic).copied().unwrap_or(0)))
        .collect();
    if metadata != consumer.subscribed_metadata {
        consumer.subscribed_metadata = metadata;
        changed = true;
    }
    changed
}

#[cfg(test)]
pub(in crate::group) mod tests {
    use super::*;

    pub(in crate::group) fn member(id: &str, topics: &[&str]) -> ConsumerMember {
        ConsumerMember {
            client_id: "c".to_owned(),
            client_host: "/127.0.0.1".to_owned(),
            rebalance_timeout_ms: 60_000,
            subscribed_topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            resolved_topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            ..ConsumerMember::new(id, 0)
        }
    }
}
