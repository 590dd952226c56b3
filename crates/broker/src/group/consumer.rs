//! The next-generation consumer group protocol (KIP-848; Kafka's `ConsumerGroup`,
//! `ConsumerGroupMember` and `CurrentAssignmentBuilder`): members heartbeat with their
//! subscription, the broker computes the target assignment with a server-side assignor
//! (`uniform`, sticky, or `range`) and hands each member its partitions, revoking before it
//! assigns so that no partition ever has two owners. Pure data and rules; times are passed in.

use std::collections::{BTreeMap, BTreeSet};

/// A partition, by topic name.
pub(crate) type Partition = (String, i32);

/// The assignors served, Kafka's names; the first is the default.
pub(crate) const ASSIGNORS: [&str; 2] = ["uniform", "range"];

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

    /// Whether another member owns `partition` or has not released it yet.
    fn owned_elsewhere(&self, member_id: &str, partition: &Partition) -> bool {
        self.members.values().any(|other| {
            other.member_id != member_id
                && (other.assigned.contains(partition)
                    || other.pending_revocation.contains(partition))
        })
    }

    /// Kafka's `CurrentAssignmentBuilder` for one member's heartbeat: `owned` is what the
    /// member says it owns (`None`: unchanged). Revocations come first (the epoch stays until
    /// the member confirms); then the member moves to the assignment epoch and gets the target
    /// partitions nobody else still holds.
    pub(crate) fn reconcile(
        &mut self,
        member_id: &str,
        owned: Option<&BTreeSet<Partition>>,
        now_ms: i64,
    ) {
        let target = self.target.get(member_id).cloned().unwrap_or_default();
        let assignment_epoch = self.assignment_epoch;
        let Some(member) = self.members.get_mut(member_id) else { return };
        if !member.pending_revocation.is_empty() {
            let released = owned.is_some_and(|owned| member.pending_revocation.is_disjoint(owned));
            if !released {
                return;
            }
            member.pending_revocation.clear();
            member.revoking_since_ms = None;
        }
        let revoke: BTreeSet<Partition> = member.assigned.difference(&target).cloned().collect();
        if !revoke.is_empty() {
            member.assigned.retain(|partition| !revoke.contains(partition));
            member.pending_revocation = revoke;
            member.revoking_since_ms = Some(now_ms);
            return;
        }
        if member.member_epoch != assignment_epoch {
            member.previous_member_epoch = member.member_epoch;
            member.member_epoch = assignment_epoch;
        }
        let wanted: Vec<Partition> = target.difference(&member.assigned).cloned().collect();
        let free: Vec<Partition> = wanted
            .into_iter()
            .filter(|partition| !self.owned_elsewhere(member_id, partition))
            .collect();
        if let Some(member) = self.members.get_mut(member_id) {
            member.assigned.extend(free);
        }
    }
}

/// Every partition some member subscribes to, with the members that may own it.
fn subscribed_partitions(
    members: &BTreeMap<String, ConsumerMember>,
    partitions_of: &dyn Fn(&str) -> i32,
) -> BTreeMap<String, (i32, Vec<String>)> {
    let mut topics: BTreeMap<String, (i32, Vec<String>)> = BTreeMap::new();
    for member in members.values() {
        for topic in &member.resolved_topics {
            let count = partitions_of(topic);
            if count > 0 {
                topics
                    .entry(topic.clone())
                    .or_insert((count, Vec::new()))
                    .1
                    .push(member.member_id.clone());
            }
        }
    }
    topics
}

/// Kafka's `UniformAssignor`, sticky: members end within one partition of each other (with
/// the same subscriptions), and each keeps as many of its current partitions as its share
/// allows: up to the floor of the fair share first, then one more for as many members as the
/// remainder allows; the rest go to the eligible member with the fewest partitions (ties to
/// the smaller member id).
pub(crate) fn uniform(
    members: &BTreeMap<String, ConsumerMember>,
    partitions_of: &dyn Fn(&str) -> i32,
) -> BTreeMap<String, BTreeSet<Partition>> {
    let topics = subscribed_partitions(members, partitions_of);
    let mut target: BTreeMap<String, BTreeSet<Partition>> =
        members.keys().map(|id| (id.clone(), BTreeSet::new())).collect();
    let total: usize = topics.values().map(|(count, _)| usize::try_from(*count).unwrap_or(0)).sum();
    let n_members = members.len().max(1);
    let (floor, mut extra) = (total / n_members, total % n_members);
    // Every partition with its eligible members and its current owner, if still eligible.
    let mut partitions: Vec<(Partition, &Vec<String>, Option<&str>)> = Vec::new();
    for (topic, (count, eligible)) in &topics {
        for partition in 0..*count {
            let key = (topic.clone(), partition);
            let owner = members
                .values()
                .find(|member| {
                    eligible.contains(&member.member_id)
                        && (member.assigned.contains(&key)
                            || member.pending_revocation.contains(&key))
                })
                .map(|member| member.member_id.as_str());
            partitions.push((key, eligible, owner));
        }
    }
    let held = |target: &BTreeMap<String, BTreeSet<Partition>>, id: &str| {
        target.get(id).map_or(0, BTreeSet::len)
    };
    let mut unassigned = Vec::new();
    let mut over_floor = Vec::new();
    for (key, eligible, owner) in partitions {
        match owner {
            Some(owner) if held(&target, owner) < floor => {
                if let Some(set) = target.get_mut(owner) {
                    set.insert(key);
                }
            }
            Some(owner) => over_floor.push((key, eligible, owner)),
            None => unassigned.push((key, eligible)),
        }
    }
    for (key, eligible, owner) in over_floor {
        if extra > 0 && held(&target, owner) == floor {
            extra -= 1;
            if let Some(set) = target.get_mut(owner) {
                set.insert(key);
            }
        } else {
            unassigned.push((key, eligible));
        }
    }
    for (key, eligible) in unassigned {
        let least = eligible.iter().min_by_key(|id| (held(&target, id), (*id).clone())).cloned();
        if let Some(set) = least.and_then(|id| target.get_mut(&id)) {
            set.insert(key);
        }
    }
    target
}

/// Kafka's `RangeAssignor` (server side): per topic, the subscribed members in id order get
/// contiguous ranges, the first ones one more partition when it does not divide evenly.
pub(crate) fn range(
    members: &BTreeMap<String, ConsumerMember>,
    partitions_of: &dyn Fn(&str) -> i32,
) -> BTreeMap<String, BTreeSet<Partition>> {
    let mut target: BTreeMap<String, BTreeSet<Partition>> =
        members.keys().map(|id| (id.clone(), BTreeSet::new())).collect();
    for (topic, (count, eligible)) in subscribed_partitions(members, partitions_of) {
        let n_members = i32::try_from(eligible.len()).unwrap_or(i32::MAX).max(1);
        let (per, extra) = (count / n_members, count % n_members);
        let mut next = 0;
        for (idx, member_id) in eligible.iter().enumerate() {
            let idx = i32::try_from(idx).unwrap_or(i32::MAX);
            let take = per + i32::from(idx < extra);
            if let Some(set) = target.get_mut(member_id) {
                set.extend((next..next + take).map(|partition| (topic.clone(), partition)));
            }
            next += take;
        }
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, topics: &[&str]) -> ConsumerMember {
        ConsumerMember {
            member_id: id.to_owned(),
            instance_id: None,
            rack_id: None,
            client_id: "c".to_owned(),
            client_host: "/127.0.0.1".to_owned(),
            member_epoch: 0,
            previous_member_epoch: -1,
            rebalance_timeout_ms: 60_000,
            subscribed_topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            subscribed_regex: None,
            resolved_topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            server_assignor: None,
            assigned: BTreeSet::new(),
            pending_revocation: BTreeSet::new(),
            revoking_since_ms: None,
            last_heartbeat_ms: 0,
            sent_assignment: None,
        }
    }

    fn four(_: &str) -> i32 {
        4
    }

    fn names(set: &BTreeSet<Partition>) -> Vec<String> {
        set.iter().map(|(topic, partition)| format!("{topic}-{partition}")).collect()
    }

    #[test]
    fn range_splits_each_topic_in_contiguous_ranges() {
        let members: BTreeMap<_, _> =
            [member("a", &["t"]), member("b", &["t"]), member("c", &["t"])]
                .into_iter()
                .map(|m| (m.member_id.clone(), m))
                .collect();
        let target = range(&members, &four);
        assert_eq!(names(&target["a"]), ["t-0", "t-1"]);
        assert_eq!(names(&target["b"]), ["t-2"]);
        assert_eq!(names(&target["c"]), ["t-3"]);
    }

    #[test]
    fn uniform_is_balanced_and_sticky() {
        let mut a = member("a", &["t", "u"]);
        a.assigned = (0..4).flat_map(|p| [("t".to_owned(), p), ("u".to_owned(), p)]).collect();
        let members: BTreeMap<_, _> =
            [a, member("b", &["t", "u"])].into_iter().map(|m| (m.member_id.clone(), m)).collect();
        let target = uniform(&members, &four);
        assert_eq!((target["a"].len(), target["b"].len()), (4, 4));
        // a keeps what it had up to its share; b gets only partitions a gives up.
        assert!(target["a"].is_subset(&members["a"].assigned));
        assert!(target["a"].is_disjoint(&target["b"]));
        // A member subscribed to one topic only gets partitions of that topic.
        let members: BTreeMap<_, _> = [member("a", &["t", "u"]), member("b", &["u"])]
            .into_iter()
            .map(|m| (m.member_id.clone(), m))
            .collect();
        let target = uniform(&members, &four);
        assert!(target["b"].iter().all(|(topic, _)| topic == "u"));
        assert_eq!(target["a"].len() + target["b"].len(), 8);
    }

    #[test]
    fn uniform_gives_a_newcomer_its_share() {
        let mut a = member("a", &["t"]);
        a.assigned = [("t".to_owned(), 0), ("t".to_owned(), 1)].into();
        let mut b = member("b", &["t"]);
        b.assigned = [("t".to_owned(), 2), ("t".to_owned(), 3)].into();
        let members: BTreeMap<_, _> =
            [a, b, member("c", &["t"])].into_iter().map(|m| (m.member_id.clone(), m)).collect();
        let target = uniform(&members, &four);
        let sizes: Vec<usize> = target.values().map(BTreeSet::len).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 4);
        assert!(sizes.iter().all(|n| (1..=2).contains(n)), "{sizes:?}");
        assert!(target["a"].is_subset(&members["a"].assigned));
        assert!(target["b"].is_subset(&members["b"].assigned));
        // Five members, four partitions: one each for four of them, nobody twice.
        let members: BTreeMap<_, _> = ["a", "b", "c", "d", "e"]
            .into_iter()
            .map(|id| (id.to_owned(), member(id, &["t"])))
            .collect();
        let sizes: Vec<usize> = uniform(&members, &four).values().map(BTreeSet::len).collect();
        assert_eq!(sizes, [1, 1, 1, 1, 0]);
    }

    #[test]
    fn reconciliation_revokes_before_it_assigns() {
        let mut group = ConsumerGroup::default();
        group.members.insert("a".to_owned(), member("a", &["t"]));
        group.group_epoch = 1;
        group.maybe_compute_target(&four);
        group.reconcile("a", None, 0);
        assert_eq!((group.members["a"].member_epoch, group.members["a"].assigned.len()), (1, 4));
        assert_eq!(group.state(), "Stable");
        // b joins: a must give two partitions up before b gets them.
        group.members.insert("b".to_owned(), member("b", &["t"]));
        group.group_epoch = 2;
        group.maybe_compute_target(&four);
        assert_eq!(group.state(), "Reconciling");
        group.reconcile("b", None, 10);
        assert_eq!(group.members["b"].member_epoch, 2);
        assert!(group.members["b"].assigned.is_empty(), "a still owns them");
        group.reconcile("a", None, 20);
        assert_eq!(group.members["a"].member_epoch, 1, "epoch stays until it revokes");
        assert_eq!(group.members["a"].pending_revocation.len(), 2);
        // a heartbeats without confirming: nothing moves.
        group.reconcile("a", None, 30);
        assert_eq!(group.members["a"].member_epoch, 1);
        let owned = group.members["a"].assigned.clone();
        group.reconcile("a", Some(&owned), 40);
        assert_eq!(group.members["a"].member_epoch, 2);
        group.reconcile("b", None, 50);
        assert_eq!(group.members["b"].assigned.len(), 2);
        assert!(group.members["a"].assigned.is_disjoint(&group.members["b"].assigned));
        assert_eq!(group.state(), "Stable");
    }
}
