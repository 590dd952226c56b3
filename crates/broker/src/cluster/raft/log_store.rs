//! Raft's log as the seglog partition `__cluster_metadata-0` (Kafka's `KafkaMetadataLog`): each
//! entry is one record batch, its partition leader epoch the entry's term, its producer id
//! field the entry's Raft index (KRaft leaves it -1; the offsets stay Kafka's, one per record).
//!
//! - A normal entry's batch holds its metadata records as values, keys null, as Kafka's.
//! - The blank entry a new leader writes holds one `NoOpRecord` keyed `seglog.raft.blank`.
//! - A membership entry holds openraft's membership as JSON keyed `seglog.raft.membership`.
//!
//! The vote and the committed log id are in `quorum-state` beside the segments (Kafka keeps
//! its vote there too), written atomically through `Fs`. An append is fsynced before openraft
//! is told it is flushed; a failed fsync poisons the log and every later call fails.

#![expect(
    clippy::result_large_err,
    reason = "openraft's traits return its StorageError; the helpers return it too"
)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{
    AnyError, CommittedLeaderId, Entry, EntryPayload, LogId, OptionalSend, RaftLogReader,
    StorageError, StorageIOError, Vote,
};
use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};
use seglog_storage::config::LogConfig;
use seglog_storage::io::{Fs, OpenMode};
use seglog_storage::log::load::LoadParams;
use seglog_storage::log::partition_log::{Isolation, PartitionLog, TopicPartition};
use serde::{Deserialize, Serialize};

use super::{MetadataCommand, MetadataRaftConfig, NodeId};
use crate::cluster::records::MetadataRecord;

/// The metadata topic (Kafka's `__cluster_metadata`).
pub const METADATA_TOPIC: &str = "__cluster_metadata";
const BLANK_KEY: &[u8] = b"seglog.raft.blank";
const MEMBERSHIP_KEY: &[u8] = b"seglog.raft.membership";
/// The most bytes one read of the log returns (entries are read batch by batch).
const READ_BYTES_MAX: u32 = 8 << 20;

type StoreResult<T> = Result<T, StorageError<NodeId>>;

fn write_error(error: impl ToString) -> StorageError<NodeId> {
    StorageError::IO { source: StorageIOError::write_logs(AnyError::error(error)) }
}

fn read_error(error: impl ToString) -> StorageError<NodeId> {
    StorageError::IO { source: StorageIOError::read_logs(AnyError::error(error)) }
}

/// `quorum-state`: the vote, the last committed log id and the last purged one.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct QuorumState {
    vote: Option<Vote<NodeId>>,
    committed: Option<LogId<NodeId>>,
    #[serde(default)]
    purged: Option<LogId<NodeId>>,
}

/// Where an entry is in the log.
#[derive(Debug, Clone, Copy)]
struct EntryPlace {
    base_offset: i64,
    /// The offset after its batch.
    end_offset: i64,
    term: u64,
    /// Its batch's size.
    bytes: u64,
}

/// The metadata log, shared by openraft's writer and its readers.
#[derive(Debug, Clone)]
pub struct MetadataLogStore {
    inner: Arc<std::sync::Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    log: PartitionLog,
    /// Every entry in the log: Raft index -> its batch.
    places: BTreeMap<u64, EntryPlace>,
    last_purged: Option<LogId<NodeId>>,
    state: QuorumState,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// An entry as its batch at `base_offset`.
pub fn entry_to_batch(
    entry: &Entry<MetadataRaftConfig>,
    base_offset: i64,
) -> Result<Vec<u8>, String> {
    let term =
        i32::try_from(entry.log_id.leader_id.term).map_err(|_| "term above i32".to_owned())?;
    let index = i64::try_from(entry.log_id.index).map_err(|_| "index above i64".to_owned())?;
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .base_offset(base_offset)
        .partition_leader_epoch(term)
        .producer(index, -1, -1);
    let pushed = match &entry.payload {
        EntryPayload::Normal(command) => command
            .records
            .iter()
            .try_for_each(|value| builder.push(command.timestamp_ms, None, Some(value), &[])),
        EntryPayload::Blank => {
            let value = MetadataRecord::NoOp.encode();
            builder.push(-1, Some(BLANK_KEY), Some(&value), &[])
        }
        EntryPayload::Membership(membership) => {
            let value = serde_json::to_vec(membership).map_err(|e| e.to_string())?;
            builder.push(-1, Some(MEMBERSHIP_KEY), Some(&value), &[])
        }
    };
    pushed.map_err(|e| e.to_string())?;
    builder.build().map_err(|e| e.to_string())
}

/// A batch as its entry, and the number of offsets it takes.
pub fn batch_to_entry(
    batch: &seglog_format::Batch<'_>,
) -> Result<(Entry<MetadataRaftConfig>, i64), String> {
    let seglog_format::Batch::V2(v2) = batch else { return Err("not a v2 batch".to_owned()) };
    let index = u64::try_from(v2.producer_id()).map_err(|_| "no Raft index".to_owned())?;
    let term = u64::try_from(v2.partition_leader_epoch()).map_err(|_| "no term".to_owned())?;
    let log_id = LogId::new(CommittedLeaderId::new(term, 0), index);
    let decoded = batch.records(DecodeLimits::default()).map_err(|e| e.to_string())?;
    let records: Vec<_> =
        (&decoded).into_iter().collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    let n_offsets = batch.last_offset()
        - batch.base_offset(DecodeLimits::default()).map_err(|e| e.to_string())?
        + 1;
    let first = records.first();
    let payload = match first.and_then(|r| r.key) {
        Some(BLANK_KEY) => EntryPayload::Blank,
        Some(MEMBERSHIP_KEY) => {
            let value = first.and_then(|r| r.value).unwrap_or_default();
            EntryPayload::Membership(serde_json::from_slice(value).map_err(|e| e.to_string())?)
        }
        _ => EntryPayload::Normal(MetadataCommand {
            records: records.iter().map(|r| r.value.unwrap_or_default().to_vec()).collect(),
            timestamp_ms: first.map_or(-1, |r| r.timestamp),
        }),
    };
    Ok((Entry { log_id, payload }, n_offsets))
}

impl MetadataLogStore {
    /// Opens (or creates) `__cluster_metadata-0` under `metadata_dir`, recovering it.
    pub fn open(fs: Arc<dyn Fs>, metadata_dir: &Path) -> Result<Self, String> {
        let dir = metadata_dir.join(format!("{METADATA_TOPIC}-0"));
        let tp = TopicPartition { topic: METADATA_TOPIC.to_owned(), partition: 0 };
        let params = LoadParams {
            had_clean_shutdown: false,
            log_start_offset_checkpoint: 0,
            recovery_point_checkpoint: 0,
            now_ms: now_ms(),
        };
        fs.create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (log, _) = PartitionLog::open(Arc::clone(&fs), &dir, tp, LogConfig::default(), params)
            .map_err(|e| e.to_string())?;
        let state_path = dir.join("quorum-state");
        let state =
            if fs.exists(&state_path).map_err(|e| format!("{}: {e}", state_path.display()))? {
                let file = fs
                    .open(&state_path, OpenMode::Read)
                    .map_err(|e| format!("{}: {e}", state_path.display()))?;
                let bytes = seglog_storage::io::read_all(file.as_ref())
                    .map_err(|e| format!("{}: {e}", state_path.display()))?;
                serde_json::from_slice(&bytes)
                    .map_err(|e| format!("{}: {e}", state_path.display()))?
            } else {
                QuorumState::default()
            };
        let last_purged = state.purged;
        let mut inner = Inner { fs, dir, log, places: BTreeMap::new(), last_purged, state };
        inner.scan()?;
        Ok(Self { inner: Arc::new(std::sync::Mutex::new(inner)) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// After a snapshot from the leader up to `index` was installed: unless this log goes on at
    /// or past `index`, it starts again empty at `end_offset`, where the snapshot's records end on the
    /// leader (Kafka's `truncateFullyAndStartAt`), so every voter gives the next entries the
    /// leader's offsets.
    pub fn start_after_snapshot(&self, index: u64, end_offset: i64) -> seglog_storage::Result<()> {
        let mut inner = self.lock();
        if inner.places.range(index..).next().is_some() {
            return Ok(());
        }
        inner.log.truncate_fully_and_start_at(end_offset, now_ms())?;
        inner.places.clear();
        Ok(())
    }

    /// The snapshot files beside this log's segments.
    pub fn snapshot_files(&self) -> super::snapshot_file::SnapshotFiles {
        let inner = self.lock();
        super::snapshot_file::SnapshotFiles::new(Arc::clone(&inner.fs), inner.dir.clone())
    }

    /// The bytes of the entries after `index` (all of them for `None`): what a snapshot at
    /// the applied index would let go.
    pub fn bytes_after(&self, index: Option<u64>) -> u64 {
        let inner = self.lock();
        let start = index.map_or(0, |i| i + 1);
        inner.places.range(start..).map(|(_, p)| p.bytes).sum()
    }

    /// The offset after the batch of the entry at `index`, if the log still holds it.
    pub fn end_offset_of(&self, index: u64) -> Option<i64> {
        self.lock().places.get(&index).map(|p| p.end_offset)
    }

    /// Whether nothing was ever written: no entry, no purge, no vote (a node that may
    /// bootstrap a new quorum).
    pub fn is_pristine(&self) -> bool {
        let inner = self.lock();
        inner.places.is_empty() && inner.last_purged.is_none() && inner.state.vote.is_none()
    }

    /// The log's bytes from its start, for tests that compare voters' logs.
    pub fn batches_up_to(&self, index: u64) -> Result<Vec<u8>, String> {
        let inner = self.lock();
        let end = inner.places.range(index + 1..).next().map(|(_, p)| p.base_offset);
        let bytes = inner.read_all()?;
        let mut out = Vec::new();
        for item in Batches::new(&bytes) {
            let item = item.map_err(|e| e.to_string())?;
            let base =
                item.batch.base_offset(DecodeLimits::default()).map_err(|e| e.to_string())?;
            if end.is_some_and(|end| base >= end) {
                break;
            }
            out.extend_from_slice(item.batch.as_bytes());
        }
        Ok(out)
    }
}

impl Inner {
    fn read_all(&self) -> Result<Vec<u8>, String> {
        let start = self.log.log_start_offset().map_err(|e| e.to_string())?;
        let end = self.log.log_end_offset().map_err(|e| e.to_string())?;
        let mut offset = start;
        let mut out = Vec::new();
        while offset < end {
            let data = self
                .log
                .read(offset, READ_BYTES_MAX, Isolation::LogEnd, true)
                .map_err(|e| e.to_string())?;
            if data.records.is_empty() {
                break;
            }
            let mut next = offset;
            for item in Batches::new(&data.records) {
                let item = item.map_err(|e| e.to_string())?;
                next = item.batch.last_offset() + 1;
                out.extend_from_slice(item.batch.as_bytes());
            }
            if next <= offset {
                break;
            }
            offset = next;
        }
        Ok(out)
    }

    /// Rebuilds the index -> batch map from the log.
    fn scan(&mut self) -> Result<(), String> {
        let bytes = self.read_all()?;
        self.places.clear();
        for item in Batches::new(&bytes) {
            let batch = item.map_err(|e| e.to_string())?.batch;
            let (entry, n_offsets) = batch_to_entry(&batch)?;
            let base_offset =
                batch.base_offset(DecodeLimits::default()).map_err(|e| e.to_string())?;
            let place = EntryPlace {
                base_offset,
                end_offset: base_offset + n_offsets,
                term: entry.log_id.leader_id.term,
                bytes: batch.size_bytes() as u64,
            };
            self.places.insert(entry.log_id.index, place);
        }
        // A purge recorded before its segments went: those entries are gone for openraft.
        if let Some(purged) = self.last_purged {
            self.places.retain(|index, _| *index > purged.index);
        }
        self.advance_high_watermark().map_err(|e| e.to_string())
    }

    /// The log's high watermark is the end of the committed entries (a purge may not pass it).
    fn advance_high_watermark(&self) -> seglog_storage::Result<()> {
        let committed = self.state.committed.and_then(|id| self.places.get(&id.index));
        if let Some(place) = committed {
            self.log.update_high_watermark(place.end_offset)?;
        }
        Ok(())
    }

    fn log_id(index: u64, place: EntryPlace) -> LogId<NodeId> {
        LogId::new(CommittedLeaderId::new(place.term, 0), index)
    }

    fn save_state(&self) -> StoreResult<()> {
        let bytes = serde_json::to_vec(&self.state).map_err(write_error)?;
        seglog_storage::dirs::checkpoint::write_atomically(
            self.fs.as_ref(),
            &self.dir.join("quorum-state"),
            &bytes,
        )
        .map_err(write_error)
    }

    fn entries(
        &self,
        range: (Bound<u64>, Bound<u64>),
    ) -> StoreResult<Vec<Entry<MetadataRaftConfig>>> {
        let Some((_, first)) = self.places.range(range).next() else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        let mut offset = first.base_offset;
        let end = self.log.log_end_offset().map_err(read_error)?;
        'read: while offset < end {
            let data = self
                .log
                .read(offset, READ_BYTES_MAX, Isolation::LogEnd, true)
                .map_err(read_error)?;
            if data.records.is_empty() {
                break;
            }
            for item in Batches::new(&data.records) {
                let batch = item.map_err(read_error)?.batch;
                let (entry, _) = batch_to_entry(&batch).map_err(read_error)?;
                offset = batch.last_offset() + 1;
                if !range.contains(&entry.log_id.index) {
                    if matches!(range.1, Bound::Included(end) if entry.log_id.index > end)
                        || matches!(range.1, Bound::Excluded(end) if entry.log_id.index >= end)
                    {
                        break 'read;
                    }
                    continue;
                }
                out.push(entry);
            }
        }
        Ok(out)
    }
}

impl MetadataLogStore {
    /// Runs `work` on the log on tokio's blocking pool: reads and fsyncs never hold a reactor
    /// thread (ARCHITECTURE.md, "The reactor never waits on the disk").
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Inner) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut inner = inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            work(&mut inner)
        })
        .await
        .map_err(write_error)?
    }
}

impl RaftLogReader<MetadataRaftConfig> for MetadataLogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> StoreResult<Vec<Entry<MetadataRaftConfig>>> {
        let range = (range.start_bound().cloned(), range.end_bound().cloned());
        self.blocking(move |inner| inner.entries(range)).await
    }
}

impl RaftLogStorage<MetadataRaftConfig> for MetadataLogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> StoreResult<LogState<MetadataRaftConfig>> {
        let inner = self.lock();
        let last =
            inner.places.iter().next_back().map(|(index, place)| Inner::log_id(*index, *place));
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: last.or(inner.last_purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StoreResult<()> {
        let vote = *vote;
        self.blocking(move |inner| {
            inner.state.vote = Some(vote);
            inner.save_state()
        })
        .await
    }

    async fn read_vote(&mut self) -> StoreResult<Option<Vote<NodeId>>> {
        Ok(self.lock().state.vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> StoreResult<()> {
        self.blocking(move |inner| {
            inner.state.committed = committed;
            inner.save_state()?;
            inner.advance_high_watermark().map_err(write_error)
        })
        .await
    }

    async fn read_committed(&mut self) -> StoreResult<Option<LogId<NodeId>>> {
        Ok(self.lock().state.committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<MetadataRaftConfig>,
    ) -> StoreResult<()>
    where
        I: IntoIterator<Item = Entry<MetadataRaftConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry<MetadataRaftConfig>> = entries.into_iter().collect();
        self.blocking(move |inner| {
            let now = now_ms();
            for entry in entries {
                let base_offset = inner.log.log_end_offset().map_err(write_error)?;
                let batch = entry_to_batch(&entry, base_offset).map_err(write_error)?;
                let info = inner.log.append_as_follower(&batch, now).map_err(write_error)?;
                let place = EntryPlace {
                    base_offset,
                    end_offset: info.last_offset + 1,
                    term: entry.log_id.leader_id.term,
                    bytes: batch.len() as u64,
                };
                inner.places.insert(entry.log_id.index, place);
            }
            // Durable before openraft counts it (a vote or commit may rest on it).
            let flushed = inner
                .log
                .flush(now)
                .map(|_offset| ())
                .map_err(|e| std::io::Error::other(e.to_string()));
            let failed = flushed.as_ref().err().map(ToString::to_string);
            callback.log_io_completed(flushed);
            failed.map_or(Ok(()), |e| Err(write_error(e)))
        })
        .await
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> StoreResult<()> {
        self.blocking(move |inner| {
            let Some(place) = inner.places.get(&log_id.index).copied() else { return Ok(()) };
            inner.log.truncate_to(place.base_offset, now_ms()).map_err(write_error)?;
            inner.places.split_off(&log_id.index);
            Ok(())
        })
        .await
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> StoreResult<()> {
        self.blocking(move |inner| {
            // Recorded first: a crash before the segments go leaves entries openraft ignores.
            inner.state.purged = Some(log_id);
            inner.save_state()?;
            let next = inner.places.range(log_id.index + 1..).next().map(|(_, p)| p.base_offset);
            if let Some(next) = next {
                inner.log.maybe_increment_log_start_offset(next).map_err(write_error)?;
                inner.log.delete_segments_below_log_start(now_ms()).map_err(write_error)?;
            }
            inner.places = inner.places.split_off(&(log_id.index + 1));
            inner.last_purged = Some(log_id);
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use openraft::{BasicNode, Membership};
    use seglog_storage::testing::Rng;

    use super::*;

    /// Every kind of entry, with random terms, indexes, offsets and records, comes back from
    /// its batch as it went in, taking one offset per record.
    #[test]
    fn entries_round_trip_through_their_batches() {
        for seed in 1..=300u64 {
            let mut rng = Rng(seed);
            let term = rng.below(1 << 20);
            let index = rng.below(1 << 40);
            let payload = match rng.below(3) {
                0 => EntryPayload::Blank,
                1 => {
                    let voters: BTreeSet<NodeId> = (1..=1 + rng.below(5)).collect();
                    let nodes: BTreeMap<NodeId, BasicNode> = voters
                        .iter()
                        .map(|id| (*id, BasicNode { addr: format!("10.0.0.{id}:9093") }))
                        .collect();
                    EntryPayload::Membership(Membership::new(vec![voters], nodes))
                }
                _ => {
                    let n_records = 1 + rng.below(20) as usize;
                    let records = (0..n_records)
                        .map(|i| {
                            let len = rng.below(200) as usize;
                            (0..len).map(|j| (i * 31 + j) as u8).collect()
                        })
                        .collect();
                    let timestamp_ms = rng.below(1 << 41) as i64;
                    EntryPayload::Normal(MetadataCommand { records, timestamp_ms })
                }
            };
            let entry =
                Entry { log_id: LogId::new(CommittedLeaderId::new(term, 0), index), payload };
            let base_offset = rng.below(1 << 40) as i64;
            let bytes = entry_to_batch(&entry, base_offset).unwrap();
            let batch = Batches::new(&bytes).next().unwrap().unwrap().batch;
            batch.validate().unwrap();
            let (back, n_offsets) = batch_to_entry(&batch).unwrap();
            assert_eq!(back.log_id, entry.log_id, "seed {seed}");
            assert_eq!(
                format!("{:?}", back.payload),
                format!("{:?}", entry.payload),
                "seed {seed}"
            );
            let expected = match &entry.payload {
                EntryPayload::Normal(command) => command.records.len() as i64,
                _ => 1,
            };
            assert_eq!(n_offsets, expected, "seed {seed}");
        }
    }
}
