//! One classic consumer group in memory (Kafka's `GroupMetadata` and `MemberMetadata`): its
//! state, members, generation, chosen protocol and committed offsets. Pure data and rules; no
//! I/O, no clock (times are passed in), so every transition can be tested alone.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::group::consumer::group::ConsumerGroup;
use crate::group::offsets::Committed;

/// Kafka's `GroupState` for classic groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupState {
    /// No members; offsets may still be kept.
    Empty,
    /// Waiting for every member to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Assigned; members heartbeat.
    Stable,
    /// Deleted.
    Dead,
}

impl GroupState {
    /// The name DescribeGroups and ListGroups use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::PreparingRebalance => "PreparingRebalance",
            Self::CompletingRebalance => "CompletingRebalance",
            Self::Stable => "Stable",
            Self::Dead => "Dead",
        }
    }
}

/// What a JoinGroup is answered with.
#[derive(Debug, Clone, Default)]
pub(crate) struct JoinResult {
    pub(crate) error_code: i16,
    pub(crate) generation_id: i32,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) leader: String,
    pub(crate) member_id: String,
    pub(crate) skip_assignment: bool,
    /// For the leader: every member with its metadata for the chosen protocol.
    pub(crate) members: Vec<(String, Option<String>, Bytes)>,
}

impl JoinResult {
    pub(crate) fn error(member_id: &str, error_code: i16) -> Self {
        Self { error_code, generation_id: -1, member_id: member_id.to_owned(), ..Self::default() }
    }
}

/// What a SyncGroup is answered with.
#[derive(Debug, Clone, Default)]
pub(crate) struct SyncResult {
    pub(crate) error_code: i16,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) assignment: Bytes,
}

impl SyncResult {
    pub(crate) fn error(error_code: i16) -> Self {
        Self { error_code, ..Self::default() }
    }
}

/// One member (Kafka's `MemberMetadata`).
#[derive(Debug)]
#[expect(clippy::struct_field_names, reason = "Kafka's field names")]
pub(crate) struct Member {
    pub(crate) member_id: String,
    pub(crate) group_instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) session_timeout_ms: i32,
    pub(crate) rebalance_timeout_ms: i32,
    /// The protocols it supports, in its order of preference, with their metadata.
    pub(crate) protocols: Vec<(String, Bytes)>,
    pub(crate) assignment: Bytes,
    pub(crate) awaiting_join: Option<oneshot::Sender<JoinResult>>,
    pub(crate) awaiting_sync: Option<oneshot::Sender<SyncResult>>,
    /// When it last heartbeat, joined or synced.
    pub(crate) last_heartbeat_ms: i64,
    /// Joined during the current rebalance for the first time.
    pub(crate) is_new: bool,
}

impl Member {
    /// The member's metadata for `protocol`.
    pub(crate) fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, metadata)| metadata.clone())
            .unwrap_or_default()
    }

    /// Whether its session is over at `now_ms` (a member waiting in a join or sync is alive).
    pub(crate) fn expired(&self, now_ms: i64) -> bool {
        if self.awaiting_join.is_some() || self.awaiting_sync.is_some() {
            return false;
        }
        now_ms > self.last_heartbeat_ms + i64::from(self.session_timeout_ms)
    }

    pub(crate) fn same_protocols(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }

    /// Answers its waiting JoinGroup and SyncGroup, if any, with `error_code`.
    pub(crate) fn fail_waiters(&mut self, error_code: i16) {
        if let Some(waiter) = self.awaiting_join.take() {
            let _ = waiter.send(JoinResult::error(&self.member_id, error_code));
        }
        if let Some(waiter) = self.awaiting_sync.take() {
            let _ = waiter.send(SyncResult::error(error_code));
        }
    }
}

/// The join phase's timer: Kafka's `InitialDelayedJoin` or `DelayedJoin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinTimer {
    /// A group that was empty waits `group.initial.rebalance.delay.ms` for more members,
    /// extended while new ones keep coming, up to the rebalance timeout in all.
    Initial { deadline_ms: i64, delay_ms: i64, remaining_ms: i64 },
    /// Completes when every member has rejoined, or at the deadline without the others.
    Rebalance { deadline_ms: i64 },
}

/// A classic group (Kafka's `GroupMetadata`).
#[derive(Debug)]
#[expect(clippy::struct_field_names, reason = "Kafka's field names")]
pub(crate) struct Group {
    pub(crate) group_id: String,
    pub(crate) state: GroupState,
    pub(crate) state_timestamp_ms: i64,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol: Option<String>,
    pub(crate) generation_id: i32,
    pub(crate) leader: Option<String>,
    pub(crate) members: BTreeMap<String, Member>,
    /// Members told MEMBER_ID_REQUIRED, with the time their id lapses.
    pub(crate) pending_members: HashMap<String, i64>,
    /// `group.instance.id` to member id.
    pub(crate) static_members: HashMap<String, String>,
    pub(crate) offsets: BTreeMap<(String, i32), Committed>,
    /// Offsets committed in open transactions, by producer id (Kafka's
    /// `pendingTransactionalOffsetCommits`): visible once the COMMIT marker is written.
    pub(crate) pending_txn_offsets: BTreeMap<i64, BTreeMap<(String, i32), Committed>>,
    pub(crate) join_timer: Option<JoinTimer>,
    /// A member joined during the initial delay (which then extends).
    pub(crate) new_member_added: bool,
    /// Members that have not sent SyncGroup for this generation, and when they must have.
    pub(crate) pending_sync: HashSet<String>,
    pub(crate) sync_deadline_ms: Option<i64>,
    /// Set when the group uses the KIP-848 consumer protocol (then `members` stays empty).
    pub(crate) consumer: Option<ConsumerGroup>,
}

impl Group {
    pub(crate) fn new(group_id: &str, now_ms: i64) -> Self {
        Self {
            group_id: group_id.to_owned(),
            state: GroupState::Empty,
            state_timestamp_ms: now_ms,
            protocol_type: None,
            protocol: None,
            generation_id: 0,
            leader: None,
            members: BTreeMap::new(),
            pending_members: HashMap::new(),
            static_members: HashMap::new(),
            offsets: BTreeMap::new(),
            pending_txn_offsets: BTreeMap::new(),
            join_timer: None,
            new_member_added: false,
            pending_sync: HashSet::new(),
            sync_deadline_ms: None,
            consumer: None,
        }
    }

    pub(crate) fn transition(&mut self, state: GroupState, now_ms: i64) {
        self.state = state;
        self.state_timestamp_ms = now_ms;
    }

    pub(crate) fn is(&self, state: GroupState) -> bool {
        self.state == state
    }

    pub(crate) fn is_leader(&self, member_id: &str) -> bool {
        self.leader.as_deref() == Some(member_id)
    }

    /// Whether the group holds nothing: no member or pending member, no offset, no stored
    /// generation and no KIP-848 epoch. Such a group leaves no record behind, so it can go at
    /// once (replaying `__consumer_offsets` would not bring it back either).
    pub(crate) fn holds_nothing(&self) -> bool {
        self.is(GroupState::Empty)
            && self.generation_id == 0
            && self.members.is_empty()
            && self.pending_members.is_empty()
            && self.offsets.is_empty()
            && self.pending_txn_offsets.is_empty()
            && self
                .consumer
                .as_ref()
                .is_none_or(|consumer| consumer.members.is_empty() && consumer.group_epoch == 0)
    }

    /// Whether the group has KIP-848 members (then no classic member may join).
    pub(crate) fn has_consumer_members(&self) -> bool {
        self.consumer.as_ref().is_some_and(|consumer| !consumer.members.is_empty())
    }

    /// Drops every member's assignment and answers each waiting SyncGroup with `error_code`.
    pub(crate) fn fail_syncs(&mut self, error_code: i16) {
        for member in self.members.values_mut() {
            member.assignment = Bytes::new();
            if let Some(waiter) = member.awaiting_sync.take() {
                let _ = waiter.send(SyncResult::error(error_code));
            }
        }
    }

    /// The longest rebalance timeout of the members (the join phase's bound).
    pub(crate) fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .values()
            .map(|member| i64::from(member.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    /// Kafka's `hasAllMembersJoined`.
    pub(crate) fn all_members_joined(&self) -> bool {
        self.pending_members.is_empty()
            && self.members.values().all(|member| member.awaiting_join.is_some())
    }

    /// The protocols every member supports (Kafka's `candidateProtocols`).
    fn candidate_protocols(&self) -> Vec<String> {
        let mut members = self.members.values();
        let Some(first) = members.next() else { return Vec::new() };
        let mut candidates: Vec<String> =
            first.protocols.iter().map(|(name, _)| name.clone()).collect();
        for member in members {
            candidates.retain(|name| member.protocols.iter().any(|(other, _)| other == name));
        }
        candidates
    }

    /// Whether a joining member with `protocol_type` and `protocols` fits the group (Kafka's
    /// `supportsProtocols`).
    pub(crate) fn supports_protocols(
        &self,
        protocol_type: &str,
        protocols: &[(String, Bytes)],
    ) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        if self.protocol_type.as_deref() != Some(protocol_type) {
            return false;
        }
        let candidates = self.candidate_protocols();
        protocols.iter().any(|(name, _)| candidates.contains(name))
    }

    /// Kafka's `selectProtocol`: each member votes for its most preferred candidate; the most
    /// votes win (ties go to the earlier candidate).
    pub(crate) fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: Vec<usize> = vec![0; candidates.len()];
        for member in self.members.values() {
            if let Some(idx) = member
                .protocols
                .iter()
                .find_map(|(name, _)| candidates.iter().position(|candidate| candidate == name))
                && let Some(count) = votes.get_mut(idx)
            {
                *count += 1;
            }
        }
        let best = votes.iter().copied().max()?;
        candidates.into_iter().zip(votes).find(|(_, count)| *count == best).map(|(name, _)| name)
    }

    /// Removes a member (and its static id).
    pub(crate) fn remove_member(&mut self, member_id: &str) -> Option<Member> {
        let member = self.members.remove(member_id)?;
        if let Some(instance) = &member.group_instance_id
            && self.static_members.get(instance).map(String::as_str) == Some(member_id)
        {
            self.static_members.remove(instance);
        }
        self.pending_sync.remove(member_id);
        if self.is_leader(member_id) {
            self.leader = self.members.keys().next().cloned();
        }
        Some(member)
    }

    /// The topics the members subscribe to, from their `consumer` protocol metadata (Kafka's
    /// `ConsumerProtocolSubscription`: version, then an array of topic names), or `None` when
    /// the group's protocol is not `consumer` or a subscription does not parse.
    pub(crate) fn subscribed_topics(&self) -> Option<HashSet<String>> {
        if self.protocol_type.as_deref() != Some("consumer") {
            return None;
        }
        let protocol = self.protocol.as_deref()?;
        let mut topics = HashSet::new();
        for member in self.members.values() {
            topics.extend(parse_subscription_topics(&member.metadata(protocol))?);
        }
        Some(topics)
    }
}

/// The topic names of a `ConsumerProtocolSubscription` (any version: the topics come first).
pub(crate) fn parse_subscription_topics(bytes: &[u8]) -> Option<Vec<String>> {
    let mut reader = seglog_format::varint::Reader::new(bytes);
    let _version = reader.i16().ok()?;
    let count = reader.i32().ok()?;
    let count = usize::try_from(count).ok()?;
    if count > reader.remaining() / 2 {
        return None;
    }
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        let length = usize::try_from(reader.i16().ok()?).ok()?;
        let name = reader.bytes(length).ok()?;
        topics.push(String::from_utf8(name.to_vec()).ok()?);
    }
    Some(topics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, protocols: &[&str]) -> Member {
        Member {
            member_id: id.to_owned(),
            group_instance_id: None,
            client_id: "c".to_owned(),
            client_host: "/127.0.0.1".to_owned(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 60_000,
            protocols: protocols
                .iter()
                .map(|name| ((*name).to_owned(), Bytes::from_static(b"m")))
                .collect(),
            assignment: Bytes::new(),
            awaiting_join: None,
            awaiting_sync: None,
            last_heartbeat_ms: 0,
            is_new: false,
        }
    }

    #[test]
    fn protocol_selection_follows_votes_among_common_protocols() {
        let mut group = Group::new("g", 0);
        group.protocol_type = Some("consumer".to_owned());
        group.members.insert("a".into(), member("a", &["cooperative-sticky", "range"]));
        group.members.insert("b".into(), member("b", &["range", "roundrobin"]));
        group.members.insert("c".into(), member("c", &["roundrobin", "range"]));
        // Only "range" is common to all three.
        assert_eq!(group.select_protocol().as_deref(), Some("range"));
        let join = [("roundrobin".to_owned(), Bytes::new())];
        assert!(!group.supports_protocols("consumer", &join));
        let join = [("range".to_owned(), Bytes::new())];
        assert!(group.supports_protocols("consumer", &join));
        assert!(!group.supports_protocols("connect", &join));
        group.members.remove("a");
        // b votes range, c votes roundrobin: a tie goes to b's order of candidates.
        assert_eq!(group.select_protocol().as_deref(), Some("range"));
    }

    #[test]
    fn session_expiry_spares_waiting_members() {
        let mut alive = member("a", &["range"]);
        alive.last_heartbeat_ms = 1_000;
        assert!(!alive.expired(11_000));
        assert!(alive.expired(11_001));
        let (sender, _receiver) = oneshot::channel();
        alive.awaiting_join = Some(sender);
        assert!(!alive.expired(99_000));
    }

    #[test]
    fn subscriptions_parse_and_hostile_counts_do_not_allocate() {
        let mut bytes = vec![0, 1, 0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'c'];
        bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(parse_subscription_topics(&bytes), Some(vec!["a".to_owned(), "bc".to_owned()]));
        assert_eq!(parse_subscription_topics(&[0, 0, 0x7f, 0xff, 0xff, 0xff]), None);
    }
}
