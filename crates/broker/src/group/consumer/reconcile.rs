//! A KIP-848 member's reconciliation (Kafka's `CurrentAssignmentBuilder`): from what it owns
//! towards its target, revocations first and confirmed before its epoch moves, and a partition
//! given only once no other member holds it or has it pending revocation.

use std::collections::BTreeSet;

use super::group::{ConsumerGroup, Partition};

impl ConsumerGroup {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::consumer::group::tests::member;

    fn four(_: &str) -> i32 {
        4
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
