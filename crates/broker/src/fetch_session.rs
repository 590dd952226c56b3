//! Incremental fetch sessions (KIP-227; Kafka's `FetchSessionCache`, `FetchSession` and
//! `CachedPartition` in `FetchSession.scala`).
//!
//! A consumer of many partitions opens a session with a full fetch at epoch 0; the response
//! carries the session's id. From then on it sends only what changed (partitions added or
//! whose fetch offset moved, and `forgotten_topics_data`), at the epoch the session expects,
//! and the broker answers only the partitions with something to say: records, an error, or a
//! high watermark, last stable offset or log start offset other than the one it last sent.
//!
//! The cache holds at most `max.incremental.fetch.session.cache.slots` sessions (Kafka's
//! default 1,000; 0 turns sessions off). When it is full, a new session takes the slot of the
//! least recently used one if that one has been idle for [`EVICTION_IDLE_MS`], else of the
//! smallest one if the new one has more partitions (Kafka's eviction rules, followers aside);
//! otherwise it is refused, and the response carries session id 0 (a sessionless full fetch,
//! which every client handles).

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;

/// Kafka's `FetchMetadata.INITIAL_EPOCH`: a full fetch that asks for a new session.
pub(crate) const INITIAL_EPOCH: i32 = 0;
/// Kafka's `FetchMetadata.FINAL_EPOCH`: a sessionless full fetch (closing the named session).
pub(crate) const FINAL_EPOCH: i32 = -1;
/// How long a session must be unused before any new session may take its slot (Kafka's
/// `min.incremental.fetch.session.eviction.ms`, 120 s).
pub(crate) const EVICTION_IDLE_MS: u128 = 120_000;

/// The next epoch after `epoch` (Kafka's `FetchMetadata.nextEpoch`: 1 after `i32::MAX`).
fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX { 1 } else { epoch + 1 }
}

/// Which topic a session's partition belongs to: by name before Fetch v13, by id from v13.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum TopicKey {
    Name(String),
    Id(uuid::Uuid),
}

fn topic_key(topic: &FetchTopic, version: i16) -> TopicKey {
    if version >= 13 {
        TopicKey::Id(topic.topic_id)
    } else {
        TopicKey::Name(topic.topic.0.to_string())
    }
}

/// One partition of a session (Kafka's `CachedPartition`): what the fetcher last asked for and
/// what the broker last told it.
#[derive(Debug, Clone)]
struct CachedPartition {
    topic: TopicName,
    topic_id: uuid::Uuid,
    request: FetchPartition,
    /// The high watermark last sent (-1: none yet, or an error was sent).
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
}

impl CachedPartition {
    fn new(topic: &FetchTopic, request: &FetchPartition) -> Self {
        Self {
            topic: topic.topic.clone(),
            topic_id: topic.topic_id,
            request: request.clone(),
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
        }
    }

    /// Notes what a response says of this partition; whether an incremental response must
    /// carry it (Kafka's `maybeUpdateResponseData`).
    fn update(&mut self, data: &PartitionData) -> bool {
        let mut must_respond = data.records.as_ref().is_some_and(|records| !records.is_empty());
        if data.high_watermark != self.high_watermark {
            self.high_watermark = data.high_watermark;
            must_respond = true;
        }
        if data.log_start_offset != self.log_start_offset {
            self.log_start_offset = data.log_start_offset;
            must_respond = true;
        }
        if data.last_stable_offset != self.last_stable_offset {
            self.last_stable_offset = data.last_stable_offset;
            must_respond = true;
        }
        if data.error_code != 0 {
            // Always sent; and sent again once the error is gone (Kafka resets the watermark).
            self.high_watermark = -1;
            must_respond = true;
        }
        must_respond
    }
}

/// One session (Kafka's `FetchSession`).
#[derive(Debug)]
struct FetchSession {
    /// The epoch the next incremental fetch must carry.
    epoch: i32,
    /// In fetch order: a partition that returned records moves to the end, so that a response
    /// bounded by `max_bytes` does not starve the later ones.
    partitions: Vec<((TopicKey, i32), CachedPartition)>,
    last_used: Instant,
}

impl FetchSession {
    fn position(&self, key: &(TopicKey, i32)) -> Option<usize> {
        self.partitions.iter().position(|(k, _)| k == key)
    }

    /// The request to serve: the session's partitions, grouped by topic in session order.
    fn effective_request(&self, request: &FetchRequest) -> FetchRequest {
        let mut effective = request.clone();
        effective.topics = Vec::new();
        effective.forgotten_topics_data = Vec::new();
        for ((key, _), cached) in &self.partitions {
            let same_topic = effective.topics.last().is_some_and(|last: &FetchTopic| match key {
                TopicKey::Id(id) => last.topic_id == *id,
                TopicKey::Name(_) => last.topic == cached.topic,
            });
            if !same_topic {
                effective.topics.push(
                    FetchTopic::default()
                        .with_topic(cached.topic.clone())
                        .with_topic_id(cached.topic_id),
                );
            }
            if let Some(topic) = effective.topics.last_mut() {
                topic.partitions.push(cached.request.clone());
            }
        }
        effective
    }
}

/// How a Fetch request relates to the session cache.
#[derive(Debug)]
pub(crate) enum SessionContext {
    /// Serve the request as it is; the response carries `session_id` (0: no session).
    Full { session_id: i32 },
    /// Serve `effective` (the session's partitions after this request's changes), then send
    /// only the partitions [`FetchSessionCache::finish_incremental`] keeps.
    Incremental { session_id: i32, effective: Box<FetchRequest> },
    /// Answer with this top-level error (FETCH_SESSION_ID_NOT_FOUND,
    /// INVALID_FETCH_SESSION_EPOCH).
    Error(i16),
}

/// FETCH_SESSION_ID_NOT_FOUND.
const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
/// INVALID_FETCH_SESSION_EPOCH.
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;

/// The broker's fetch sessions (Kafka's `FetchSessionCache`).
#[derive(Debug)]
pub(crate) struct FetchSessionCache {
    slots_max: usize,
    sessions: HashMap<i32, FetchSession>,
    /// Draws session ids (splitmix64 over a seed from the clock).
    next_id_state: u64,
}

impl FetchSessionCache {
    pub(crate) fn new(slots_max: u32) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9, |since| since.as_nanos() as u64);
        Self {
            slots_max: usize::try_from(slots_max).unwrap_or(usize::MAX),
            sessions: HashMap::new(),
            next_id_state: seed,
        }
    }

    /// Sessions held now.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }

    fn draw_id(&mut self) -> i32 {
        loop {
            self.next_id_state = self.next_id_state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.next_id_state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let id = (z as i32) & i32::MAX;
            if id != 0 && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }

    /// Decides how to serve `request` (Kafka's `FetchManager.newContext`), creating, closing or
    /// updating its session.
    pub(crate) fn begin(
        &mut self,
        request: &FetchRequest,
        version: i16,
        now: Instant,
    ) -> SessionContext {
        let (id, epoch) = (request.session_id, request.session_epoch);
        if epoch == FINAL_EPOCH {
            self.sessions.remove(&id);
            return SessionContext::Full { session_id: 0 };
        }
        if epoch == INITIAL_EPOCH {
            self.sessions.remove(&id);
            return SessionContext::Full { session_id: self.create(request, version, now) };
        }
        let Some(session) = self.sessions.get_mut(&id) else {
            return SessionContext::Error(FETCH_SESSION_ID_NOT_FOUND);
        };
        if session.epoch != epoch {
            return SessionContext::Error(INVALID_FETCH_SESSION_EPOCH);
        }
        for topic in &request.topics {
            let key = topic_key(topic, version);
            for partition in &topic.partitions {
                let partition_key = (key.clone(), partition.partition);
                match session.position(&partition_key) {
                    Some(at) => {
                        if let Some((_, cached)) = session.partitions.get_mut(at) {
                            cached.request = partition.clone();
                        }
                    }
                    None => {
                        session
                            .partitions
                            .push((partition_key, CachedPartition::new(topic, partition)));
                    }
                }
            }
        }
        for forgotten in &request.forgotten_topics_data {
            let key = if version >= 13 {
                TopicKey::Id(forgotten.topic_id)
            } else {
                TopicKey::Name(forgotten.topic.0.to_string())
            };
            session.partitions.retain(|((topic, partition), _)| {
                !(*topic == key && forgotten.partitions.contains(partition))
            });
        }
        session.epoch = next_epoch(epoch);
        session.last_used = now;
        SessionContext::Incremental {
            session_id: id,
            effective: Box::new(session.effective_request(request)),
        }
    }

    /// A new session for a full fetch at epoch 0, or 0 when no slot is free.
    fn create(&mut self, request: &FetchRequest, version: i16, now: Instant) -> i32 {
        if self.slots_max == 0 {
            return 0;
        }
        let n_partitions: usize = request.topics.iter().map(|topic| topic.partitions.len()).sum();
        if self.sessions.len() >= self.slots_max {
            let stale = self
                .sessions
                .iter()
                .min_by_key(|(_, session)| session.last_used)
                .filter(|(_, session)| {
                    now.saturating_duration_since(session.last_used).as_millis() >= EVICTION_IDLE_MS
                })
                .map(|(id, _)| *id);
            let smaller = || {
                self.sessions
                    .iter()
                    .min_by_key(|(_, session)| (session.partitions.len(), session.last_used))
                    .filter(|(_, session)| session.partitions.len() < n_partitions)
                    .map(|(id, _)| *id)
            };
            let Some(victim) = stale.or_else(smaller) else { return 0 };
            self.sessions.remove(&victim);
        }
        let mut partitions = Vec::with_capacity(n_partitions);
        let mut seen = BTreeSet::new();
        for topic in &request.topics {
            let key = topic_key(topic, version);
            for partition in &topic.partitions {
                let partition_key = (key.clone(), partition.partition);
                if seen.insert(partition_key.clone()) {
                    partitions.push((partition_key, CachedPartition::new(topic, partition)));
                }
            }
        }
        let id = self.draw_id();
        self.sessions.insert(
            id,
            FetchSession { epoch: next_epoch(INITIAL_EPOCH), partitions, last_used: now },
        );
        id
    }

    /// Notes a full response of session `session_id` (what each partition was told).
    pub(crate) fn finish_full(
        &mut self,
        session_id: i32,
        version: i16,
        request: &FetchRequest,
        responses: &[(usize, &PartitionData)],
    ) {
        let Some(session) = self.sessions.get_mut(&session_id) else { return };
        for (topic_idx, data) in responses {
            let Some(topic) = request.topics.get(*topic_idx) else { continue };
            let key = (topic_key(topic, version), data.partition_index);
            if let Some(at) = session.position(&key)
                && let Some((_, cached)) = session.partitions.get_mut(at)
            {
                cached.update(data);
            }
        }
    }

    /// Which partitions of an incremental response of session `session_id` to send (Kafka's
    /// `IncrementalFetchContext.updateAndGenerateResponseData`): one flag per `responses`
    /// entry (indexed into the effective request's topics). Partitions that returned records
    /// move to the end of the session's order.
    pub(crate) fn finish_incremental(
        &mut self,
        session_id: i32,
        version: i16,
        effective: &FetchRequest,
        responses: &[(usize, &PartitionData)],
    ) -> Vec<bool> {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            // Evicted meanwhile: send everything (the client's next fetch finds no session).
            return vec![true; responses.len()];
        };
        let mut rotated = Vec::new();
        let keep = responses
            .iter()
            .map(|(topic_idx, data)| {
                let Some(topic) = effective.topics.get(*topic_idx) else { return true };
                let key = (topic_key(topic, version), data.partition_index);
                let Some(at) = session.position(&key) else { return true };
                let Some((_, cached)) = session.partitions.get_mut(at) else { return true };
                if data.records.as_ref().is_some_and(|records| !records.is_empty()) {
                    rotated.push(key);
                }
                cached.update(data)
            })
            .collect();
        for key in rotated {
            if let Some(at) = session.position(&key) {
                let moved = session.partitions.remove(at);
                session.partitions.push(moved);
            }
        }
        keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(topic: &str, partitions: &[i32]) -> FetchRequest {
        FetchRequest::default().with_session_epoch(INITIAL_EPOCH).with_topics(vec![
            FetchTopic::default().with_topic(TopicName(topic.to_owned().into())).with_partitions(
                partitions
                    .iter()
                    .map(|p| FetchPartition::default().with_partition(*p).with_fetch_offset(0))
                    .collect(),
            ),
        ])
    }

    fn created(cache: &mut FetchSessionCache, request: &FetchRequest, now: Instant) -> i32 {
        match cache.begin(request, 12, now) {
            SessionContext::Full { session_id } => session_id,
            other => panic!("a full fetch got {other:?}"),
        }
    }

    #[test]
    fn a_full_cache_evicts_an_idle_session_or_a_smaller_one_and_refuses_otherwise() {
        let t0 = Instant::now();
        let mut cache = FetchSessionCache::new(2);
        let a = created(&mut cache, &full("t", &[0, 1, 2]), t0);
        let b = created(&mut cache, &full("t", &[0]), t0);
        assert!(a != 0 && b != 0 && a != b);
        // Full, nobody idle, no bigger: refused.
        assert_eq!(created(&mut cache, &full("t", &[0]), t0), 0);
        // Bigger than the smallest (b): takes its slot.
        let c = created(&mut cache, &full("t", &[0, 1]), t0);
        assert_ne!(c, 0);
        let incremental = FetchRequest::default().with_session_id(b).with_session_epoch(1);
        assert_eq!(
            format!("{:?}", cache.begin(&incremental, 12, t0)),
            format!("{:?}", SessionContext::Error(FETCH_SESSION_ID_NOT_FOUND))
        );
        // Idle for the eviction time: any new session takes the least recently used slot.
        let later = t0 + std::time::Duration::from_millis(EVICTION_IDLE_MS as u64 + 1);
        let d = created(&mut cache, &full("t", &[0]), later);
        assert_ne!(d, 0);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn sessions_off_with_zero_slots() {
        let mut cache = FetchSessionCache::new(0);
        assert_eq!(created(&mut cache, &full("t", &[0]), Instant::now()), 0);
        assert_eq!(cache.len(), 0);
    }
}
