//! The server-side assignors of KIP-848 (Kafka's `UniformAssignor`, sticky, and
//! `RangeAssignor`): from the members' subscriptions and current partitions to the target
//! assignment. Pure functions.

use std::collections::{BTreeMap, BTreeSet};

use super::group::{ConsumerMember, Partition};

/// The assignors served, Kafka's names; the first is the default.
pub(crate) const ASSIGNORS: [&str; 2] = ["uniform", "range"];

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
    use crate::group::consumer::group::tests::member;

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
}
