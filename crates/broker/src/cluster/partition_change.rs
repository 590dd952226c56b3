//! One partition's change (Kafka's `PartitionChangeBuilder`): the ISR and (a reassignment's)
//! replicas the caller asks for, a reassignment completed once every replica being added is in
//! the ISR (KIP-455), KIP-966's eligible leader replicas (ELR) and last known leader, and the
//! election that follows, as one `PartitionChangeRecord`, or none when nothing changes.
//!
//! With the ELR on (`eligible.leader.replicas.enable`, seglog's default):
//! - the ISR may become empty;
//! - while the ISR is smaller than the topic's `min.insync.replicas`, the members it loses
//!   join the ELR (not a broker that restarted uncleanly); the high watermark does not move
//!   then (the leader's side, `replication`), so every ELR member holds every committed record;
//! - an empty ISR elects from the ELR; with both empty, the last known leader (the partition's
//!   leader when its ISR became empty) leads again once it is back, an election counted
//!   unclean (Kafka's `canElectLastKnownLeader`, with KAFKA-19522's fix: never while it is
//!   not acceptable);
//! - the ELR empties once the ISR reaches `min.insync.replicas` again, and on an unclean
//!   election.

use std::collections::BTreeSet;

use super::image::PartitionState;
use super::records::{NO_LEADER, NO_LEADER_CHANGE, PartitionChange};

/// A partition's replicas as a reassignment sets them (Kafka's `PartitionReassignmentReplicas`):
/// the target then the replicas being removed, and the ones being added and removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assignment {
    pub(crate) replicas: Vec<i32>,
    pub(crate) adding: Vec<i32>,
    pub(crate) removing: Vec<i32>,
}

impl Assignment {
    /// A move from `current` to `target`: `target` then what it drops, adding what is new.
    pub(crate) fn moving(current: &[i32], target: &[i32]) -> Self {
        let removing: Vec<i32> = current.iter().copied().filter(|r| !target.contains(r)).collect();
        let adding: Vec<i32> = target.iter().copied().filter(|r| !current.contains(r)).collect();
        let replicas = target.iter().chain(&removing).copied().collect();
        Self { replicas, adding, removing }
    }

    /// Kafka's `maybeCompleteReassignment`: done once the ISR (less the replicas being removed,
    /// never empty) holds every remaining replica. Returns the final replicas and ISR.
    fn complete(&self, target_isr: &[i32]) -> Option<(Vec<i32>, Vec<i32>)> {
        if self.adding.is_empty() && self.removing.is_empty() {
            return None;
        }
        let kept = |r: &i32| !self.removing.contains(r);
        let isr: Vec<i32> = target_isr.iter().copied().filter(kept).collect();
        let replicas: Vec<i32> = self.replicas.iter().copied().filter(kept).collect();
        if isr.is_empty() || replicas.is_empty() || !replicas.iter().all(|r| isr.contains(r)) {
            return None;
        }
        Some((replicas, isr))
    }
}

/// What a change of one partition is built from.
pub(crate) struct ChangeBuilder<'a> {
    pub(crate) topic_id: [u8; 16],
    pub(crate) partition_id: i32,
    pub(crate) partition: &'a PartitionState,
    /// The ISR asked for (before the election).
    pub(crate) target_isr: Vec<i32>,
    /// Whether a replica may lead (registered, unfenced, not shutting down; or the broker
    /// being added).
    pub(crate) acceptable: &'a dyn Fn(i32) -> bool,
    /// The topic's `min.insync.replicas`, at most its replication factor.
    pub(crate) min_isr: usize,
    /// KIP-966's ELR on.
    pub(crate) elr_enabled: bool,
    /// An unclean election may happen (the topic's `unclean.leader.election.enable`, or an
    /// operator's unclean ElectLeaders).
    pub(crate) unclean_allowed: bool,
    /// A broker that restarted uncleanly: it leaves the ISR and may not join the ELR.
    pub(crate) unclean_shutdown: Option<i32>,
    /// A reassignment's new replicas, else the partition's own.
    pub(crate) target_assignment: Option<Assignment>,
}

impl ChangeBuilder<'_> {
    /// Kafka's `build()`: the ELR first, then the election, then the record's fields; `None`
    /// when the record would change nothing.
    pub(crate) fn build(self) -> Option<PartitionChange> {
        let p = self.partition;
        let mut target = self.target_assignment.clone().unwrap_or_else(|| Assignment {
            replicas: p.replicas.clone(),
            adding: p.adding_replicas.clone(),
            removing: p.removing_replicas.clone(),
        });
        let mut target_isr = self.target_isr.clone();
        // Kafka's `completeReassignmentIfNeeded`.
        if let Some((replicas, isr)) = target.complete(&target_isr) {
            target = Assignment { replicas, adding: Vec::new(), removing: Vec::new() };
            target_isr = isr;
        }
        let mut target_elr = self.target_elr(&target_isr, &target.replicas);
        let (leader, unclean) = self.elect(&target_isr, &target_elr, &target.replicas);
        let mut change = PartitionChange::new(self.topic_id, self.partition_id);
        if leader != p.leader {
            if target_elr.contains(&leader) {
                target_isr = vec![leader];
                target_elr.retain(|r| *r != leader);
            }
            change.leader = leader;
            if unclean {
                // What the ISR had beyond this replica's log is lost.
                tracing::warn!(
                    partition = self.partition_id,
                    leader,
                    isr = ?p.isr,
                    "unclean leader election: a replica outside the ISR and ELR leads"
                );
                change.isr = Some(vec![leader]);
            }
        }
        // Kafka's `triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`: a replica leaving bumps
        // the leader epoch, the leader staying.
        if change.leader == NO_LEADER_CHANGE
            && !p.replicas.iter().all(|r| target.replicas.contains(r))
        {
            change.leader = p.leader;
        }
        // Kafka's `maybeUpdateRecordElr`: an unclean election or a disabled ELR empties it.
        if change.isr.is_some() || !self.elr_enabled {
            target_elr.clear();
        }
        if target_elr != p.elr {
            change.elr = Some(target_elr);
        }
        if change.isr.is_none()
            && (!target_isr.is_empty() || self.elr_enabled)
            && target_isr != p.isr
        {
            change.isr = Some(target_isr);
        }
        self.update_last_known_leader(&mut change);
        // Kafka's `setAssignmentChanges`.
        if target.replicas != p.replicas {
            change.replicas = Some(target.replicas);
        }
        if target.removing != p.removing_replicas {
            change.removing_replicas = Some(target.removing);
        }
        if target.adding != p.adding_replicas {
            change.adding_replicas = Some(target.adding);
        }
        let nothing = change.isr.is_none()
            && change.leader == NO_LEADER_CHANGE
            && change.replicas.is_none()
            && change.adding_replicas.is_none()
            && change.removing_replicas.is_none()
            && change.elr.is_none()
            && change.last_known_elr.is_none();
        (!nothing).then_some(change)
    }

    /// Kafka's `maybePopulateTargetElr`: empty when the target ISR reaches the minimum, else
    /// the ELR and the current ISR, less the target ISR, an uncleanly restarted broker and
    /// replicas a reassignment removed.
    fn target_elr(&self, target_isr: &[i32], target_replicas: &[i32]) -> Vec<i32> {
        let p = self.partition;
        if !self.elr_enabled {
            return p.elr.clone();
        }
        if target_isr.len() >= self.min_isr {
            return Vec::new();
        }
        let candidates: BTreeSet<i32> = p.elr.iter().chain(&p.isr).copied().collect();
        candidates
            .into_iter()
            .filter(|r| {
                !target_isr.contains(r)
                    && target_replicas.contains(r)
                    && Some(*r) != self.unclean_shutdown
            })
            .collect()
    }

    /// Kafka's `electAnyLeader`: the current leader if still valid, else the first valid
    /// replica (an ISR member; an ELR member when the ISR is empty), else the last known
    /// leader, else (when allowed) any acceptable replica. Returns the leader and whether the
    /// election was unclean.
    fn elect(&self, target_isr: &[i32], target_elr: &[i32], replicas: &[i32]) -> (i32, bool) {
        let p = self.partition;
        let valid = |r: i32| {
            (target_isr.contains(&r) || (target_isr.is_empty() && target_elr.contains(&r)))
                && (self.acceptable)(r)
        };
        if p.leader != NO_LEADER && valid(p.leader) {
            return (p.leader, false);
        }
        if let Some(leader) = replicas.iter().copied().find(|r| valid(*r)) {
            return (leader, false);
        }
        if self.elr_enabled
            && target_isr.is_empty()
            && target_elr.is_empty()
            && let [last_known] = p.last_known_elr[..]
            && last_known != NO_LEADER
            && (self.acceptable)(last_known)
        {
            return (last_known, true);
        }
        if self.unclean_allowed
            && let Some(leader) = replicas.iter().copied().find(|r| (self.acceptable)(*r))
        {
            return (leader, true);
        }
        (NO_LEADER, false)
    }

    /// Kafka's `maybeUpdateLastKnownLeader`: the leader is remembered when the ISR first
    /// becomes empty, and forgotten once the partition has a leader again.
    fn update_last_known_leader(&self, change: &mut PartitionChange) {
        let p = self.partition;
        if !self.elr_enabled {
            return;
        }
        let emptied = change.isr.as_ref().is_some_and(Vec::is_empty);
        if emptied && p.last_known_elr != [p.leader] {
            change.last_known_elr = Some(vec![p.leader]);
        } else if (change.leader >= 0 || (p.leader != NO_LEADER && change.leader != NO_LEADER))
            && !p.last_known_elr.is_empty()
        {
            change.last_known_elr = Some(Vec::new());
        }
    }
}
