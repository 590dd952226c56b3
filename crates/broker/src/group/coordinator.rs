//! The group coordinator itself (Kafka's `GroupCoordinator`): the groups behind its one mutex,
//! Kafka's member ids, shutdown, the requests that see groups of both protocols (ListGroups,
//! DeleteGroups), and the timers [`GroupCoordinator::tick`] runs: classic and KIP-848 sessions,
//! the join phase, pending syncs, expired offsets and the bound on `__consumer_offsets`.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kafka_protocol::ResponseError;
use seglog_storage::manager::LogManager;

use crate::replica::ReplicaManager;
use tokio::sync::Notify;

use super::GroupConfig;
use super::classic::group::{Group, GroupState};
use super::classic::protocol::run_classic_timers;
use super::consumer::protocol::expire_consumer_members;
use super::store::tombstones;
use crate::error::NONE;

/// Kafka's `offsets.retention.check.interval.ms` default: how often expired offsets go.
const OFFSETS_RETENTION_CHECK_INTERVAL_MS: i64 = 600_000;

/// The shared state behind the mutex.
#[derive(Debug, Default)]
pub(super) struct Inner {
    pub(super) groups: HashMap<String, Group>,
    /// Partitions of `__consumer_offsets` (0 until it exists).
    pub(super) partitions: i32,
    pub(super) shutting_down: bool,
    /// A cluster's broker: the partitions of `__consumer_offsets` whose groups are loaded (it
    /// leads them).
    pub(super) loaded: std::collections::BTreeSet<i32>,
    /// When offsets of empty groups were last checked for expiry.
    last_retention_check_ms: Option<i64>,
}

/// The group coordinator (Kafka's `GroupCoordinator`).
#[derive(Debug)]
pub struct GroupCoordinator {
    pub(super) manager: Arc<LogManager>,
    pub(super) config: GroupConfig,
    inner: Mutex<Inner>,
    /// Every write to `__consumer_offsets` goes through the broker's one append path.
    pub(super) replicas: ReplicaManager,
    pub(super) member_ids: MemberIds,
    /// A cluster's broker: `__consumer_offsets` is the controller's (created through it with
    /// `offsets.topic.num.partitions` partitions), and this broker coordinates the groups of
    /// the partitions it leads, whose logs are here.
    pub(super) in_cluster: std::sync::atomic::AtomicBool,
}

/// Kafka's member ids: the client id, a dash and a random UUID.
#[derive(Debug)]
pub(super) struct MemberIds {
    seed: RandomState,
    counter: AtomicU64,
}

impl MemberIds {
    pub(super) fn next(&self, client_id: &str) -> String {
        let count = self.counter.fetch_add(1, Ordering::Relaxed);
        let high = self.seed.hash_one(count);
        let low = self.seed.hash_one(high ^ 0x9E37_79B9_7F4A_7C15);
        let mut bytes = [0u8; 16];
        let (first, second) = bytes.split_at_mut(8);
        first.copy_from_slice(&high.to_be_bytes());
        second.copy_from_slice(&low.to_be_bytes());
        // Version 4, variant 1, as java.util.UUID.randomUUID.
        if let Some(byte) = bytes.get_mut(6) {
            *byte = (*byte & 0x0f) | 0x40;
        }
        if let Some(byte) = bytes.get_mut(8) {
            *byte = (*byte & 0x3f) | 0x80;
        }
        format!("{client_id}-{}", uuid::Uuid::from_bytes(bytes).hyphenated())
    }
}

impl GroupCoordinator {
    pub(crate) fn new(
        manager: Arc<LogManager>,
        config: GroupConfig,
        appended: Arc<Notify>,
    ) -> Self {
        Self {
            replicas: ReplicaManager::new(Arc::clone(&manager), appended),
            manager,
            config,
            inner: Mutex::new(Inner::default()),
            member_ids: MemberIds { seed: RandomState::new(), counter: AtomicU64::new(0) },
            in_cluster: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The coordinator's settings.
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// Fails every waiting JoinGroup and SyncGroup (so in-flight requests finish) and refuses
    /// new ones, for a broker shutdown.
    pub(crate) fn shutdown(&self) {
        let mut inner = self.lock();
        inner.shutting_down = true;
        for group in inner.groups.values_mut() {
            for member in group.members.values_mut() {
                member.fail_waiters(ResponseError::CoordinatorNotAvailable.code());
            }
        }
    }

    /// ListGroups: `(group id, protocol type, state, type)`, optionally only in some states
    /// (case-insensitive, as Kafka compares them) and of some types (`classic`, `consumer`).
    pub(crate) fn list_groups(
        &self,
        states: &[String],
        types: &[String],
    ) -> Vec<(String, String, &'static str, &'static str)> {
        let inner = self.lock();
        let mut groups: Vec<_> = inner
            .groups
            .values()
            .filter(|group| !group.is(GroupState::Dead))
            .map(|group| {
                let (state, kind) = match &group.consumer {
                    Some(consumer) => (consumer.state(), "consumer"),
                    None => (group.state.name(), "classic"),
                };
                (
                    group.group_id.clone(),
                    group.protocol_type.clone().unwrap_or_default(),
                    state,
                    kind,
                )
            })
            .filter(|(_, _, state, kind)| {
                (states.is_empty() || states.iter().any(|s| s.eq_ignore_ascii_case(state)))
                    && (types.is_empty() || types.iter().any(|t| t.eq_ignore_ascii_case(kind)))
            })
            .collect();
        groups.sort();
        groups
    }

    /// The timers of one group that are due at `now_ms` (what [`Self::tick`] runs for every
    /// group, every 100 ms). Kafka's fire on the millisecond, so a request that decides on a
    /// group's members runs them first: a session that ran out is over when the request
    /// looks, not up to a tick later.
    fn run_due_timers(&self, inner: &mut Inner, group_id: &str, now_ms: i64) {
        let Some(group) = inner.groups.get_mut(group_id) else { return };
        let (became_empty, consumer_changed) = group_timers(group, &self.config, now_ms);
        if became_empty {
            let _ = self.store_group(inner, group_id, now_ms);
        }
        if consumer_changed {
            let _ = self.persist_and_wait(inner, group_id, now_ms);
        }
    }

    /// DeleteGroups for one group: only an empty group can go; its offsets and metadata get
    /// tombstones.
    pub(crate) fn delete_group(&self, group_id: &str, now_ms: i64) -> i16 {
        if group_id.is_empty() {
            return ResponseError::InvalidGroupId.code();
        }
        let mut inner = self.lock();
        if let Some(refusal) = self.refusal(&inner, group_id) {
            return refusal.code();
        }
        self.run_due_timers(&mut inner, group_id, now_ms);
        let Some(group) = inner.groups.get(group_id) else {
            return ResponseError::GroupIdNotFound.code();
        };
        if group.is(GroupState::Dead) {
            return ResponseError::GroupIdNotFound.code();
        }
        if !group.is(GroupState::Empty) || group.has_consumer_members() {
            return ResponseError::NonEmptyGroup.code();
        }
        match tombstones(group) {
            Ok(records) => {
                if let Err(code) = self.append(&mut inner, group_id, &records, now_ms) {
                    return code.code();
                }
            }
            Err(_) => return ResponseError::UnknownServerError.code(),
        }
        inner.groups.remove(group_id);
        NONE
    }

    /// Expires sessions, pending member ids and pending syncs, runs the join timers, removes
    /// the offsets of long-empty groups, and keeps `__consumer_offsets` bounded.
    pub fn tick(&self, now_ms: i64) {
        let mut inner = self.lock();
        if inner.shutting_down {
            return;
        }
        let mut to_store = Vec::new();
        let mut to_expire = Vec::new();
        let check_retention = match inner.last_retention_check_ms {
            Some(last) if now_ms - last < OFFSETS_RETENTION_CHECK_INTERVAL_MS => false,
            Some(_) => true,
            None => {
                inner.last_retention_check_ms = Some(now_ms);
                false
            }
        };
        if check_retention {
            inner.last_retention_check_ms = Some(now_ms);
        }
        let mut consumer_changed = Vec::new();
        for group in inner.groups.values_mut() {
            let (became_empty, changed) = group_timers(group, &self.config, now_ms);
            if changed {
                consumer_changed.push(group.group_id.clone());
            }
            if became_empty {
                to_store.push(group.group_id.clone());
            }
            // Kafka's cleanupGroupMetadata: offsets of a group empty for the retention time
            // expire, and an empty group with no offsets goes.
            let retention_over = check_retention
                && group.is(GroupState::Empty)
                && !group.has_consumer_members()
                && group.members.is_empty()
                && group.pending_members.is_empty()
                // Kafka keeps a group while a transaction holds offsets for it.
                && group.pending_txn_offsets.is_empty()
                && (group.offsets.is_empty()
                    || now_ms.saturating_sub(group.state_timestamp_ms)
                        > self.config.offsets_retention_ms);
            if retention_over {
                to_expire.push(group.group_id.clone());
            }
        }
        for group_id in to_store {
            let _ = self.store_group(&mut inner, &group_id, now_ms);
        }
        for group_id in consumer_changed {
            let _ = self.persist_and_wait(&mut inner, &group_id, now_ms);
        }
        for group_id in to_expire {
            let Some(group) = inner.groups.get(&group_id) else { continue };
            if let Ok(records) = tombstones(group)
                && self.append(&mut inner, &group_id, &records, now_ms).is_ok()
            {
                tracing::info!(group = %group_id, "offsets expired (offsets.retention.minutes)");
                inner.groups.remove(&group_id);
            }
        }
        // Groups that hold nothing (no member, pending member, offset or stored generation)
        // go at once, so a client inventing group ids cannot grow memory for long.
        inner.groups.retain(|_, group| !group.holds_nothing());
    }
}

/// Runs a group's due timers: KIP-848 sessions, then the classic ones (sessions, pending
/// members, syncs, joins). Returns whether the classic group became empty (its metadata to be
/// stored) and whether KIP-848 members left (to be persisted).
fn group_timers(group: &mut Group, config: &GroupConfig, now_ms: i64) -> (bool, bool) {
    let consumer_changed =
        expire_consumer_members(group, i64::from(config.consumer_session_timeout_ms), now_ms);
    let before = (group.state, group.generation_id);
    run_classic_timers(group, config, now_ms);
    let became_empty = group.is(GroupState::Empty)
        && group.members.is_empty()
        && (before.0 != GroupState::Empty || before.1 != group.generation_id);
    (became_empty, consumer_changed)
}
