//! Idempotent producers (Kafka's `ProducerStateManager`, `ProducerStateEntry` and
//! `ProducerAppendInfo`): per producer id, the epoch and the last five appended batches, so that
//! a retried batch is answered with its original offsets instead of being written twice, a
//! sequence gap is refused with OUT_OF_ORDER_SEQUENCE_NUMBER and an older epoch with
//! INVALID_PRODUCER_EPOCH.
//!
//! The state is kept in memory and saved in Kafka's `.snapshot` files
//! (`seglog_format::producer_snapshot`): `<offset>.snapshot` holds every producer's epoch and
//! last batch among the batches below `<offset>`. The partition log takes one at each roll (at
//! the new segment's base offset, written without an fsync, which the next flush does) and one at
//! clean close (at the log end offset, durable). At open the newest valid snapshot at or below
//! the log end offset is loaded and the batch headers after it are replayed
//! (`producer_rebuild::rebuild_producer_state`); a corrupt snapshot is deleted and an older one (or
//! the log itself, from the log start) is used instead. Snapshots go with their segments:
//! retention deletes those below the new log start offset, truncation those above the new log
//! end offset.
//!
//! Transactions (Kafka's `ProducerAppendInfo.appendDataBatch` / `appendEndTxnMarker`): a
//! transactional data batch of a producer with no open transaction opens one at its first offset
//! (the entry's `current_txn_first_offset`, and `ongoing_txns`: first offset -> producer); a
//! non-transactional batch while one is open is INVALID_TXN_STATE; a COMMIT or ABORT marker
//! (written by the coordinator) checks the producer epoch and the coordinator epoch
//! (TRANSACTION_COORDINATOR_FENCED when older than the entry's), takes the marker's coordinator
//! epoch, closes the transaction and yields a [`CompletedTxn`]. A completed transaction stays
//! unstable (`unreplicated_txns`) until the high watermark passes its marker, as Kafka's
//! `completeTxn` / `onHighWatermarkUpdated`; [`ProducerStateManager::first_unstable_offset`] is the
//! earliest first offset of the two sets, from which the partition log derives its last stable
//! offset. A snapshot keeps each entry's open transaction and coordinator epoch, so loading one
//! reopens the transactions that were open below its offset.
//!
//! Not done: `producer.id.expiration.ms` and `transaction.timeout.ms`-driven aborts (no such keys
//! in the topic or broker configuration yet: producers are never expired, and only the
//! coordinator ends a transaction), and the verification state of KIP-890.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{
    FileKind, FileState, ProducerSnapshotEntry, SegmentFileName, decode_producer_snapshot,
    encode_producer_snapshot, increment_sequence,
};

use super::partition_log::ActiveProducer;
use super::validator::ValidationError;
use crate::dirs::checkpoint::{CHECKPOINT_BYTES_MAX, read_if_exists, tmp_path, write_atomically};
use crate::error::{Error, Result};
use crate::io::{Fs, OpenMode};
use crate::segment::segment_path;

/// Batches remembered per producer, as Kafka's `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`
/// (a producer has at most five requests in flight).
pub const BATCHES_PER_PRODUCER_MAX: usize = 5;

/// The largest snapshot file read (bounds the allocation: 23 million producers).
pub const SNAPSHOT_BYTES_MAX: u64 = CHECKPOINT_BYTES_MAX;

/// One appended batch of a producer (Kafka's `BatchMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    /// The batch's base sequence.
    pub first_seq: i32,
    /// The sequence of its last record.
    pub last_seq: i32,
    /// The offset its first record was given.
    pub first_offset: i64,
    /// The offset its last record was given.
    pub last_offset: i64,
    /// The batch's max timestamp.
    pub timestamp: i64,
}

/// What a producer's batch is to the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerCheck {
    /// New and in sequence: append it.
    Append,
    /// Already appended (a retry): answer with these offsets, write nothing.
    Duplicate(BatchMetadata),
}

/// A snapshot that did not decode (Kafka's `CorruptSnapshotException`, which it logs as a
/// warning): it was deleted and an older snapshot, or the log, was used instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptSnapshot {
    /// The file, now deleted.
    pub path: PathBuf,
    /// Why it was refused.
    pub reason: String,
}

/// One producer's state (Kafka's `ProducerStateEntry`).
#[derive(Debug, Clone)]
struct ProducerStateEntry {
    epoch: i16,
    /// The last batches, oldest first; empty when only the epoch is known.
    batches: VecDeque<BatchMetadata>,
    /// The max timestamp of the last batch (Kafka's `lastTimestamp`).
    last_timestamp: i64,
    /// The coordinator epoch of the producer's last transaction marker, or -1.
    coordinator_epoch: i32,
    /// The first offset of the producer's open transaction in this partition, or -1.
    current_txn_first_offset: i64,
}

impl ProducerStateEntry {
    fn new(epoch: i16) -> Self {
        Self {
            epoch,
            batches: VecDeque::new(),
            last_timestamp: -1,
            coordinator_epoch: -1,
            current_txn_first_offset: -1,
        }
    }

    /// The entry a snapshot describes: its last batch only.
    fn from_snapshot(entry: &ProducerSnapshotEntry) -> Self {
        let mut state = Self::new(entry.producer_epoch);
        if entry.has_batch() {
            state.batches.push_back(BatchMetadata {
                first_seq: entry.first_sequence(),
                last_seq: entry.last_sequence,
                first_offset: entry.first_offset(),
                last_offset: entry.last_offset,
                timestamp: entry.timestamp,
            });
        }
        state.last_timestamp = entry.timestamp;
        state.coordinator_epoch = entry.coordinator_epoch;
        state.current_txn_first_offset = entry.current_txn_first_offset;
        state
    }

    /// What a snapshot keeps of it (Kafka's `writeSnapshot`): the last batch only.
    fn to_snapshot(&self, producer_id: i64) -> ProducerSnapshotEntry {
        let last = self.batches.back();
        ProducerSnapshotEntry {
            producer_id,
            producer_epoch: self.epoch,
            last_sequence: last.map_or(-1, |batch| batch.last_seq),
            last_offset: last.map_or(-1, |batch| batch.last_offset),
            offset_delta: last.map_or(0, |batch| {
                i32::try_from(batch.last_offset - batch.first_offset).unwrap_or(0)
            }),
            timestamp: self.last_timestamp,
            coordinator_epoch: self.coordinator_epoch,
            current_txn_first_offset: self.current_txn_first_offset,
        }
    }
}

/// A transaction whose COMMIT or ABORT marker was appended (Kafka's `CompletedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    /// The producer id.
    pub producer_id: i64,
    /// The transaction's first offset in this partition.
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    /// Whether the marker was an ABORT.
    pub is_aborted: bool,
}

/// A COMMIT or ABORT marker of an append (the fields Kafka's `appendEndTxnMarker` reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    /// The producer id of the batch.
    pub producer_id: i64,
    /// The producer epoch of the batch.
    pub producer_epoch: i16,
    /// The coordinator epoch in the marker's value.
    pub coordinator_epoch: i32,
    /// The marker's offset, as appended.
    pub offset: i64,
    /// The marker record's timestamp.
    pub timestamp: i64,
    /// ABORT (true) or COMMIT (false).
    pub is_abort: bool,
}

/// A completed transaction not yet below the high watermark (Kafka's `TxnMetadata` in
/// `unreplicatedTxns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UnreplicatedTxn {
    producer_id: i64,
    last_offset: i64,
}

/// The path of the snapshot at `offset` in `dir` (`<20-digit offset>.snapshot`).
pub fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    segment_path(dir, offset, FileKind::Snapshot)
}

/// A producer's last data offset and epoch (Kafka's `LastRecord`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastRecord {
    /// The last offset of the producer's last data batch, if it has one.
    pub last_data_offset: Option<i64>,
    /// The producer's epoch.
    pub producer_epoch: i16,
}

/// The producers of one partition and its snapshot files (Kafka's `ProducerStateManager`).
#[derive(Debug)]
pub struct ProducerStateManager {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    producers: BTreeMap<i64, ProducerStateEntry>,
    /// The offsets of the snapshot files in `dir` (Kafka's `snapshots`).
    snapshots: BTreeSet<i64>,
    /// The state covers every batch below this offset (Kafka's `lastMapOffset`).
    map_end_offset: i64,
    /// The offset of the last snapshot taken or loaded (Kafka's `lastSnapOffset`).
    last_snap_offset: i64,
    /// Snapshots written without an fsync, for the next flush to make durable.
    unsynced: Vec<PathBuf>,
    /// Corrupt snapshots deleted since the last [`ProducerStateManager::take_corrupt_snapshots`].
    corrupt: Vec<CorruptSnapshot>,
    /// Open transactions: first offset -> producer id (Kafka's `ongoingTxns`).
    ongoing_txns: BTreeMap<i64, i64>,
    /// Completed transactions whose marker is not yet below the high watermark, by first offset
    /// (Kafka's `unreplicatedTxns`).
    unreplicated_txns: BTreeMap<i64, UnreplicatedTxn>,
}

impl ProducerStateManager {
    /// An empty state over the snapshot files of the partition directory `dir` (Kafka's
    /// constructor, `loadSnapshots`). Leftover temporary files of an interrupted snapshot write
    /// are removed.
    pub fn open(fs: Arc<dyn Fs>, dir: &Path) -> Result<Self> {
        let mut snapshots = BTreeSet::new();
        for path in fs.list(dir).map_err(|e| Error::io("list partition", dir, e))? {
            let Some(name) = path.file_name().map(|name| name.to_string_lossy().into_owned())
            else {
                continue;
            };
            if let Some(stem) = name.strip_suffix(crate::dirs::checkpoint::TMP_SUFFIX)
                && is_live_snapshot(stem).is_some()
            {
                match fs.remove(&path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(Error::io("remove leftover snapshot", &path, error)),
                }
            } else if let Some(offset) = is_live_snapshot(&name) {
                snapshots.insert(offset);
            }
        }
        Ok(Self {
            fs,
            dir: dir.to_owned(),
            producers: BTreeMap::new(),
            snapshots,
            map_end_offset: 0,
            last_snap_offset: 0,
            unsynced: Vec::new(),
            corrupt: Vec::new(),
            ongoing_txns: BTreeMap::new(),
            unreplicated_txns: BTreeMap::new(),
        })
    }

    /// Checks a batch of `producer_id` at `epoch` with sequences `first_seq..=last_seq`.
    pub fn check(
        &self,
        producer_id: i64,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
    ) -> Result<ProducerCheck, ValidationError> {
        let Some(entry) = self.producers.get(&producer_id) else {
            // Unknown here (new, or its state was lost with a restart): accepted, as Kafka
            // accepts a producer whose state expired.
            return Ok(ProducerCheck::Append);
        };
        if epoch < entry.epoch {
            return Err(ValidationError::InvalidProducerEpoch {
                producer_id,
                epoch,
                current_epoch: entry.epoch,
            });
        }
        if epoch > entry.epoch {
            // A new epoch starts its sequences again.
            return if first_seq == 0 {
                Ok(ProducerCheck::Append)
            } else {
                Err(ValidationError::OutOfOrderSequence {
                    producer_id,
                    expected: 0,
                    found: first_seq,
                })
            };
        }
        if let Some(duplicate) = entry
            .batches
            .iter()
            .find(|batch| batch.first_seq == first_seq && batch.last_seq == last_seq)
        {
            return Ok(ProducerCheck::Duplicate(*duplicate));
        }
        let expected = entry.batches.back().map_or(0, |last| increment_sequence(last.last_seq, 1));
        if first_seq == expected {
            Ok(ProducerCheck::Append)
        } else {
            Err(ValidationError::OutOfOrderSequence { producer_id, expected, found: first_seq })
        }
    }

    /// Checks a data batch against the producer's transaction (Kafka's `appendDataBatch`): a
    /// non-transactional batch while the producer has a transaction open here is
    /// INVALID_TXN_STATE. Run after [`ProducerStateManager::check`], for leader appends only.
    pub fn check_txn_state(
        &self,
        producer_id: i64,
        first_offset: i64,
        is_transactional: bool,
    ) -> Result<(), ValidationError> {
        match self.producers.get(&producer_id) {
            Some(entry) if entry.current_txn_first_offset >= 0 && !is_transactional => {
                Err(ValidationError::InvalidTxnState {
                    message: format!(
                        "Expected transactional write from producer {producer_id} at offset {first_offset}: its transaction started at offset {}",
                        entry.current_txn_first_offset
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    /// Records an appended data batch, transactional or not (Kafka's `appendDataBatch` then
    /// `update`): a transactional batch of a producer with no open transaction opens one at the
    /// batch's first offset. Returns whether it opened one.
    pub fn update_data(
        &mut self,
        producer_id: i64,
        epoch: i16,
        batch: BatchMetadata,
        is_transactional: bool,
    ) -> bool {
        self.update(producer_id, epoch, batch);
        let Some(entry) = self.producers.get_mut(&producer_id) else { return false };
        if is_transactional && entry.current_txn_first_offset < 0 {
            entry.current_txn_first_offset = batch.first_offset;
            self.ongoing_txns.insert(batch.first_offset, producer_id);
            return true;
        }
        false
    }

    /// Checks a COMMIT or ABORT marker (Kafka's `appendEndTxnMarker`: `checkProducerEpoch`, then
    /// `checkCoordinatorEpoch`): an older producer epoch is INVALID_PRODUCER_EPOCH, an older
    /// coordinator epoch than the producer's last marker's is TRANSACTION_COORDINATOR_FENCED. A
    /// marker of a producer with no open transaction here is accepted (the coordinator writes
    /// markers to every partition of the transaction).
    pub fn check_end_txn_marker(&self, marker: &TxnMarker) -> Result<(), ValidationError> {
        let Some(entry) = self.producers.get(&marker.producer_id) else { return Ok(()) };
        if marker.producer_epoch < entry.epoch {
            return Err(ValidationError::InvalidProducerEpoch {
                producer_id: marker.producer_id,
                epoch: marker.producer_epoch,
                current_epoch: entry.epoch,
            });
        }
        if entry.coordinator_epoch > marker.coordinator_epoch {
            return Err(ValidationError::TransactionCoordinatorFenced {
                message: format!(
                    "Invalid coordinator epoch for producerId {} at offset {}: {} (zombie), {} (current)",
                    marker.producer_id,
                    marker.offset,
                    marker.coordinator_epoch,
                    entry.coordinator_epoch
                ),
            });
        }
        Ok(())
    }

    /// Records an appended marker (Kafka's `appendEndTxnMarker` and
    /// `ProducerStateEntry.update`): the entry takes the marker's producer epoch (a new one
    /// forgets the old batches) and coordinator epoch, and its transaction closes. Returns the
    /// completed transaction when one was open; the caller indexes it if aborted
    /// ([`ProducerStateManager::last_stable_offset_of`]) and then calls
    /// [`ProducerStateManager::complete_txn`].
    pub fn update_end_txn_marker(&mut self, marker: &TxnMarker) -> Option<CompletedTxn> {
        let entry = self
            .producers
            .entry(marker.producer_id)
            .or_insert_with(|| ProducerStateEntry::new(marker.producer_epoch));
        let completed = (entry.current_txn_first_offset >= 0).then_some(CompletedTxn {
            producer_id: marker.producer_id,
            first_offset: entry.current_txn_first_offset,
            last_offset: marker.offset,
            is_aborted: marker.is_abort,
        });
        if entry.epoch != marker.producer_epoch {
            entry.epoch = marker.producer_epoch;
            entry.batches.clear();
        }
        entry.coordinator_epoch = marker.coordinator_epoch;
        entry.current_txn_first_offset = -1;
        entry.last_timestamp = marker.timestamp;
        completed
    }

    /// The last stable offset recorded with an aborted transaction in the `.txnindex` (Kafka's
    /// `lastStableOffset(CompletedTxn)`): the first offset of the earliest open transaction of
    /// another producer, else the offset after the marker.
    pub fn last_stable_offset_of(&self, completed: &CompletedTxn) -> i64 {
        self.ongoing_txns
            .iter()
            .find(|(_, producer_id)| **producer_id != completed.producer_id)
            .map_or(completed.last_offset + 1, |(first_offset, _)| *first_offset)
    }

    /// Marks a transaction completed (Kafka's `completeTxn`): it stays unstable until the high
    /// watermark passes its marker.
    pub fn complete_txn(&mut self, completed: &CompletedTxn) {
        // The entry and `ongoing_txns` change together, so the transaction is there; a
        // snapshot's bytes could still disagree, which must not panic.
        if self.ongoing_txns.get(&completed.first_offset) == Some(&completed.producer_id) {
            self.ongoing_txns.remove(&completed.first_offset);
        }
        self.unreplicated_txns.insert(
            completed.first_offset,
            UnreplicatedTxn {
                producer_id: completed.producer_id,
                last_offset: completed.last_offset,
            },
        );
    }

    /// The high watermark moved (Kafka's `onHighWatermarkUpdated`): completed transactions whose
    /// marker is below it are stable.
    pub fn on_high_watermark_updated(&mut self, high_watermark: i64) {
        self.remove_unreplicated_txns(high_watermark);
    }

    fn remove_unreplicated_txns(&mut self, offset: i64) {
        self.unreplicated_txns.retain(|_, txn| txn.last_offset >= offset);
    }

    /// The first offset of the earliest transaction that is open, or completed with its marker
    /// at or above the high watermark (Kafka's `firstUnstableOffset`).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        let undecided = self.ongoing_txns.keys().next().copied();
        let unreplicated = self.unreplicated_txns.keys().next().copied();
        match (undecided, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The first offset of the earliest open transaction (Kafka's `firstUndecidedOffset`).
    pub fn first_undecided_offset(&self) -> Option<i64> {
        self.ongoing_txns.keys().next().copied()
    }

    /// The open transactions, as (first offset, producer id), by first offset.
    pub fn ongoing_txns(&self) -> Vec<(i64, i64)> {
        self.ongoing_txns.iter().map(|(first, producer)| (*first, *producer)).collect()
    }

    /// The first offset of `producer_id`'s open transaction, if it has one here.
    pub fn current_txn_first_offset(&self, producer_id: i64) -> Option<i64> {
        self.producers
            .get(&producer_id)
            .map(|entry| entry.current_txn_first_offset)
            .filter(|offset| *offset >= 0)
    }

    /// Every tracked producer, by producer id (Kafka's `activeProducers`).
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        self.producers
            .iter()
            .map(|(producer_id, entry)| ActiveProducer {
                producer_id: *producer_id,
                producer_epoch: entry.epoch,
                last_sequence: entry.batches.back().map_or(-1, |batch| batch.last_seq),
                last_timestamp: entry.last_timestamp,
                coordinator_epoch: entry.coordinator_epoch,
                current_txn_start_offset: entry.current_txn_first_offset,
            })
            .collect()
    }

    /// Forgets every producer and transaction (the state is reloaded or restarted).
    fn clear_producers(&mut self) {
        self.producers.clear();
        self.ongoing_txns.clear();
        self.unreplicated_txns.clear();
    }

    /// Records an appended batch (Kafka's `ProducerStateEntry.addBatch`): a new epoch forgets
    /// the batches of the old one.
    pub fn update(&mut self, producer_id: i64, epoch: i16, batch: BatchMetadata) {
        let entry =
            self.producers.entry(producer_id).or_insert_with(|| ProducerStateEntry::new(epoch));
        if entry.epoch != epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry.batches.push_back(batch);
        while entry.batches.len() > BATCHES_PER_PRODUCER_MAX {
            entry.batches.pop_front();
        }
        entry.last_timestamp = batch.timestamp;
    }

    /// The epoch and last batch of `producer_id`, when it is known (Kafka's `lastEntry`).
    pub fn last_entry(&self, producer_id: i64) -> Option<(i16, Option<BatchMetadata>)> {
        self.producers.get(&producer_id).map(|entry| (entry.epoch, entry.batches.back().copied()))
    }

    /// Each tracked producer's epoch and the last offset of its last data batch, if it has one
    /// (Kafka's `lastRecordsOfActiveProducers`): the batches the log cleaner keeps, emptied if
    /// need be, so that a retry of a producer's last batch is still found a duplicate.
    pub fn last_records_of_active_producers(&self) -> BTreeMap<i64, LastRecord> {
        self.producers
            .iter()
            .map(|(id, entry)| {
                let last_data_offset = entry.batches.back().map(|batch| batch.last_offset);
                (*id, LastRecord { last_data_offset, producer_epoch: entry.epoch })
            })
            .collect()
    }

    /// Producers tracked.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Whether no producer is tracked.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// The offset the state covers: every batch below it (Kafka's `mapEndOffset`).
    pub fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }

    /// Sets the offset the state covers (Kafka's `updateMapEndOffset`): after an append, the log
    /// end offset; at a roll, the new segment's base offset.
    pub fn update_map_end_offset(&mut self, offset: i64) {
        self.map_end_offset = offset;
    }

    /// The offsets of the snapshot files, oldest first.
    pub fn snapshot_offsets(&self) -> Vec<i64> {
        self.snapshots.iter().copied().collect()
    }

    /// The offset of the newest snapshot (Kafka's `latestSnapshotOffset`).
    pub fn latest_snapshot_offset(&self) -> Option<i64> {
        self.snapshots.last().copied()
    }

    /// Writes a snapshot at the map end offset, unless one was already taken there or later
    /// (Kafka's `takeSnapshot`). With `sync` the file is durable on return (temporary file,
    /// fsync, rename, fsync of the directory); without, it is renamed into place unsynced and
    /// [`ProducerStateManager::take_unsynced_snapshots`] hands it to the next flush, as Kafka
    /// keeps the fsync of a roll's snapshot off the append path. Returns whether it wrote one.
    pub fn take_snapshot(&mut self, sync: bool) -> Result<bool> {
        if self.map_end_offset <= self.last_snap_offset {
            return Ok(false);
        }
        let offset = self.map_end_offset;
        let entries: Vec<ProducerSnapshotEntry> =
            self.producers.iter().map(|(id, entry)| entry.to_snapshot(*id)).collect();
        let bytes = encode_producer_snapshot(&entries).map_err(|error| {
            Error::InvalidArgument(format!("cannot encode a producer snapshot: {error}"))
        })?;
        let path = snapshot_path(&self.dir, offset);
        if sync {
            write_atomically(self.fs.as_ref(), &path, &bytes)?;
        } else {
            write_unsynced(self.fs.as_ref(), &path, &bytes)?;
            if !self.unsynced.contains(&path) {
                self.unsynced.push(path);
            }
        }
        self.snapshots.insert(offset);
        self.last_snap_offset = offset;
        Ok(true)
    }

    /// The snapshots written without an fsync since the last call: the caller fsyncs them, then
    /// the directory.
    pub fn take_unsynced_snapshots(&mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.unsynced)
    }

    /// The corrupt snapshots found (and deleted) since the last call.
    pub fn take_corrupt_snapshots(&mut self) -> Vec<CorruptSnapshot> {
        std::mem::take(&mut self.corrupt)
    }

    /// Deletes snapshots that belong to no segment (Kafka's `removeStraySnapshots`): every
    /// snapshot whose offset is not a segment base offset, except the newest such one when it
    /// lies above every segment base (the snapshot of a clean close, at the log end offset).
    pub fn remove_stray_snapshots(&mut self, segment_base_offsets: &[i64]) -> Result<()> {
        let bases: BTreeSet<i64> = segment_base_offsets.iter().copied().collect();
        let mut strays: Vec<i64> =
            self.snapshots.iter().copied().filter(|offset| !bases.contains(offset)).collect();
        if let Some(&largest) = strays.last()
            && bases.last().is_none_or(|max_base| largest > *max_base)
        {
            strays.pop();
        }
        self.delete_snapshots(&strays)
    }

    /// Deletes the snapshots below `offset` (Kafka's `deleteSnapshotsBefore`): their segments
    /// were deleted.
    pub fn delete_snapshots_before(&mut self, offset: i64) -> Result<()> {
        let below: Vec<i64> = self.snapshots.range(..offset).copied().collect();
        self.delete_snapshots(&below)
    }

    /// Loads the newest valid snapshot at or below `offset`, leaving the newer ones alone (for a
    /// replay over recovered segments, beside the partition's own state); without one, the state
    /// is empty and ends at `log_start_offset`.
    pub fn load_at_or_below(&mut self, log_start_offset: i64, offset: i64) -> Result<()> {
        self.clear_producers();
        self.snapshots.retain(|snapshot| *snapshot <= offset && *snapshot > log_start_offset);
        self.load_from_snapshot(log_start_offset)
    }

    /// Makes the state that of the log `[log_start_offset, log_end_offset)` as far as snapshots
    /// know it (Kafka's `truncateAndReload`): snapshots above the log end or at or below the log
    /// start are deleted; unless the state already ends at the log end, it is replaced by the
    /// newest remaining snapshot (or emptied, ending at the log start). The caller then replays
    /// the batches from [`ProducerStateManager::map_end_offset`] to the log end.
    pub fn truncate_and_reload(
        &mut self,
        log_start_offset: i64,
        log_end_offset: i64,
    ) -> Result<()> {
        let out_of_range: Vec<i64> = self
            .snapshots
            .iter()
            .copied()
            .filter(|offset| *offset > log_end_offset || *offset <= log_start_offset)
            .collect();
        self.delete_snapshots(&out_of_range)?;
        if log_end_offset == self.map_end_offset {
            self.on_log_start_offset_incremented(log_start_offset);
            return Ok(());
        }
        self.clear_producers();
        self.load_from_snapshot(log_start_offset)
    }

    /// Loads the newest valid snapshot (Kafka's `loadFromSnapshot`): a corrupt one is recorded,
    /// deleted, and the next older one tried; with none left the state is empty and ends at
    /// `log_start_offset`.
    fn load_from_snapshot(&mut self, log_start_offset: i64) -> Result<()> {
        while let Some(offset) = self.latest_snapshot_offset() {
            let path = snapshot_path(&self.dir, offset);
            let entries = match read_if_exists(self.fs.as_ref(), &path, SNAPSHOT_BYTES_MAX) {
                Ok(Some(bytes)) => decode_producer_snapshot(&bytes).map_err(|e| e.to_string()),
                Ok(None) => {
                    // Gone from under us: nothing to load or delete.
                    self.snapshots.remove(&offset);
                    continue;
                }
                Err(Error::Malformed { reason, .. }) => Err(reason),
                Err(error) => return Err(error),
            };
            match entries {
                Ok(entries) => {
                    for entry in &entries {
                        // Kafka's `loadProducerEntry`: an open transaction is open again.
                        if entry.current_txn_first_offset >= 0 {
                            self.ongoing_txns
                                .insert(entry.current_txn_first_offset, entry.producer_id);
                        }
                        self.producers
                            .insert(entry.producer_id, ProducerStateEntry::from_snapshot(entry));
                    }
                    self.last_snap_offset = offset;
                    self.map_end_offset = offset;
                    return Ok(());
                }
                Err(reason) => {
                    self.corrupt.push(CorruptSnapshot { path, reason });
                    self.delete_snapshots(&[offset])?;
                }
            }
        }
        self.last_snap_offset = log_start_offset;
        self.map_end_offset = log_start_offset;
        Ok(())
    }

    /// The log start offset moved up (Kafka's `onLogStartOffsetIncremented`): completed
    /// transactions whose marker is below it are forgotten. Open transactions stay open, even
    /// when their first offset went: the partition log bounds the first unstable offset by the
    /// log start, as Kafka's `maybeIncrementFirstUnstableOffset` does.
    pub fn on_log_start_offset_incremented(&mut self, log_start_offset: i64) {
        self.remove_unreplicated_txns(log_start_offset);
        self.map_end_offset = self.map_end_offset.max(log_start_offset);
        self.last_snap_offset = self.latest_snapshot_offset().unwrap_or(log_start_offset);
    }

    /// Forgets every producer and deletes every snapshot; the state ends at `offset` (Kafka's
    /// `truncateFullyAndStartAt`).
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<()> {
        self.clear_producers();
        let all: Vec<i64> = self.snapshots.iter().copied().collect();
        self.delete_snapshots(&all)?;
        self.last_snap_offset = 0;
        self.map_end_offset = offset;
        Ok(())
    }

    /// Removes the snapshot files at `offsets`, then fsyncs the directory: a snapshot that
    /// reappeared after a crash could describe batches a truncation removed.
    fn delete_snapshots(&mut self, offsets: &[i64]) -> Result<()> {
        if offsets.is_empty() {
            return Ok(());
        }
        for offset in offsets {
            self.snapshots.remove(offset);
            let path = snapshot_path(&self.dir, *offset);
            self.unsynced.retain(|unsynced| *unsynced != path);
            match self.fs.remove(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(Error::io("delete producer snapshot", &path, error)),
            }
        }
        self.fs.sync_dir(&self.dir).map_err(|e| Error::io("fsync dir", &self.dir, e))
    }
}

/// The offset of a live `.snapshot` file name.
fn is_live_snapshot(name: &str) -> Option<i64> {
    SegmentFileName::parse(name)
        .ok()
        .filter(|parsed| parsed.kind == FileKind::Snapshot && parsed.state == FileState::Live)
        .map(|parsed| parsed.offset)
}

/// Writes `bytes` to `<path>.tmp` and renames it to `path`, without an fsync: a crashed process
/// leaves the old file or the new one; a power loss may leave a torn file, which its CRC
/// rejects.
fn write_unsynced(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    let file = fs.open(&tmp, OpenMode::CreateOrOpen).map_err(|e| Error::io("open", &tmp, e))?;
    file.set_len(0).map_err(|e| Error::io("set_len", &tmp, e))?;
    file.write_all_at(bytes, 0).map_err(|e| Error::io("write", &tmp, e))?;
    drop(file);
    fs.rename(&tmp, path).map_err(|e| Error::io("rename", &tmp, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SimFs;

    fn dir() -> PathBuf {
        PathBuf::from("/logs/p-0")
    }

    fn manager(fs: &SimFs) -> ProducerStateManager {
        fs.create_dir_all(&dir()).unwrap();
        ProducerStateManager::open(Arc::new(fs.clone()), &dir()).unwrap()
    }

    fn batch(first_seq: i32, last_seq: i32, first_offset: i64) -> BatchMetadata {
        BatchMetadata {
            first_seq,
            last_seq,
            first_offset,
            last_offset: first_offset + i64::from(last_seq - first_seq),
            timestamp: 1_000 + first_offset,
        }
    }

    #[test]
    fn sequences_duplicates_and_epochs() {
        let mut state = manager(&SimFs::new());
        assert_eq!(state.check(7, 0, 0, 2), Ok(ProducerCheck::Append));
        state.update(7, 0, batch(0, 2, 100));
        // The retry of the same batch gets its offsets back.
        assert_eq!(state.check(7, 0, 0, 2), Ok(ProducerCheck::Duplicate(batch(0, 2, 100))));
        // The next batch must start at 3.
        assert_eq!(
            state.check(7, 0, 5, 6),
            Err(ValidationError::OutOfOrderSequence { producer_id: 7, expected: 3, found: 5 })
        );
        assert_eq!(state.check(7, 0, 3, 3), Ok(ProducerCheck::Append));
        state.update(7, 0, batch(3, 3, 103));
        // An older epoch is fenced; a newer one starts again at 0.
        assert_eq!(
            state.check(7, -1, 0, 0),
            Err(ValidationError::InvalidProducerEpoch {
                producer_id: 7,
                epoch: -1,
                current_epoch: 0
            })
        );
        assert_eq!(
            state.check(7, 1, 4, 4),
            Err(ValidationError::OutOfOrderSequence { producer_id: 7, expected: 0, found: 4 })
        );
        assert_eq!(state.check(7, 1, 0, 0), Ok(ProducerCheck::Append));
        state.update(7, 1, batch(0, 0, 104));
        assert_eq!(state.check(7, 1, 0, 0), Ok(ProducerCheck::Duplicate(batch(0, 0, 104))));
        // Another producer is independent.
        assert_eq!(state.check(8, 0, 0, 0), Ok(ProducerCheck::Append));
    }

    #[test]
    fn five_batches_are_remembered_and_sequences_wrap() {
        let mut state = manager(&SimFs::new());
        for i in 0..7 {
            state.update(1, 0, batch(i, i, i64::from(i)));
        }
        assert_eq!(state.check(1, 0, 2, 2), Ok(ProducerCheck::Duplicate(batch(2, 2, 2))));
        // Older than the last five: not a known duplicate, and out of sequence.
        assert_eq!(
            state.check(1, 0, 1, 1),
            Err(ValidationError::OutOfOrderSequence { producer_id: 1, expected: 7, found: 1 })
        );
        let mut wrapping = manager(&SimFs::new());
        wrapping.update(2, 0, batch(i32::MAX - 1, i32::MAX, 0));
        assert_eq!(wrapping.check(2, 0, 0, 4), Ok(ProducerCheck::Append));
    }

    /// A snapshot keeps each producer's epoch and last batch (Kafka's `testTakeSnapshot`,
    /// `testRecoverFromSnapshot`), under the name of its offset.
    #[test]
    fn snapshots_keep_the_last_batch_of_each_producer() {
        let fs = SimFs::new();
        let mut state = manager(&fs);
        state.update(1, 0, batch(0, 1, 0));
        state.update(1, 0, batch(2, 4, 2));
        let wrapped = BatchMetadata {
            first_seq: i32::MAX,
            last_seq: 1,
            first_offset: 5,
            last_offset: 7,
            timestamp: 1_005,
        };
        state.update(2, 3, wrapped);
        state.update_map_end_offset(8);
        assert!(state.take_snapshot(true).unwrap());
        assert!(!state.take_snapshot(true).unwrap(), "not again at the same offset");
        let path = dir().join("00000000000000000008.snapshot");
        let bytes = crate::io::read_all(fs.open(&path, OpenMode::Read).unwrap().as_ref()).unwrap();
        let entries = decode_producer_snapshot(&bytes).unwrap();
        assert_eq!(
            entries,
            [
                ProducerSnapshotEntry {
                    producer_id: 1,
                    producer_epoch: 0,
                    last_sequence: 4,
                    last_offset: 4,
                    offset_delta: 2,
                    timestamp: 1_002,
                    coordinator_epoch: -1,
                    current_txn_first_offset: -1,
                },
                ProducerSnapshotEntry {
                    producer_id: 2,
                    producer_epoch: 3,
                    last_sequence: 1,
                    last_offset: 7,
                    offset_delta: 2,
                    timestamp: 1_005,
                    coordinator_epoch: -1,
                    current_txn_first_offset: -1,
                },
            ]
        );
        // A new manager over the directory loads it: the last batch is a duplicate, the one
        // before is out of sequence (Kafka keeps one batch per producer in a snapshot).
        let mut reloaded = manager(&fs);
        assert_eq!(reloaded.snapshot_offsets(), [8]);
        reloaded.truncate_and_reload(0, 8).unwrap();
        assert_eq!(reloaded.map_end_offset(), 8);
        assert_eq!(reloaded.check(1, 0, 2, 4), Ok(ProducerCheck::Duplicate(batch(2, 4, 2))));
        assert_eq!(
            reloaded.check(1, 0, 0, 1),
            Err(ValidationError::OutOfOrderSequence { producer_id: 1, expected: 5, found: 0 })
        );
        assert_eq!(reloaded.check(2, 3, i32::MAX, 1), Ok(ProducerCheck::Duplicate(wrapped)));
        assert_eq!(reloaded.check(2, 3, 2, 2), Ok(ProducerCheck::Append));
    }

    /// `testLoadFromCorruptSnapshotFile` / `testSkipSnapshotIfOffsetUnchanged`: a corrupt newest
    /// snapshot is deleted and the next older one loaded; without any, the state is empty and
    /// ends at the log start.
    #[test]
    fn a_corrupt_snapshot_falls_back_to_an_older_one() {
        let fs = SimFs::new();
        let mut state = manager(&fs);
        state.update(1, 0, batch(0, 0, 0));
        state.update_map_end_offset(1);
        state.take_snapshot(true).unwrap();
        state.update(1, 0, batch(1, 1, 1));
        state.update_map_end_offset(2);
        state.take_snapshot(true).unwrap();
        let newest = dir().join("00000000000000000002.snapshot");
        let file = fs.open(&newest, OpenMode::ReadWrite).unwrap();
        file.write_all_at(&[0xFF], 20).unwrap();
        let mut reloaded = manager(&fs);
        reloaded.truncate_and_reload(0, 2).unwrap();
        let corrupt = reloaded.take_corrupt_snapshots();
        assert_eq!(corrupt.len(), 1);
        assert_eq!(corrupt[0].path, newest);
        assert!(corrupt[0].reason.contains("crc"), "{}", corrupt[0].reason);
        assert!(!fs.exists(&newest).unwrap());
        assert_eq!((reloaded.map_end_offset(), reloaded.snapshot_offsets()), (1, vec![1]));
        assert_eq!(reloaded.last_entry(1), Some((0, Some(batch(0, 0, 0)))));
        // An empty file (a torn write) is corrupt too; with nothing left, the state is empty.
        let oldest = dir().join("00000000000000000001.snapshot");
        fs.open(&oldest, OpenMode::ReadWrite).unwrap().set_len(0).unwrap();
        let mut reloaded = manager(&fs);
        reloaded.truncate_and_reload(0, 2).unwrap();
        assert_eq!(reloaded.take_corrupt_snapshots().len(), 1);
        assert!(reloaded.is_empty());
        assert_eq!((reloaded.map_end_offset(), reloaded.latest_snapshot_offset()), (0, None));
    }

    /// `testRemoveStraySnapshotsKeepCleanShutdownSnapshot`, `testTruncateAndReloadRemovesOutOfRangeSnapshots`,
    /// `testDeleteSnapshotsBefore`, leftovers of an interrupted write.
    #[test]
    fn stray_out_of_range_and_old_snapshots_are_deleted() {
        let fs = SimFs::new();
        let mut state = manager(&fs);
        for offset in [0, 5, 7, 10, 12, 15] {
            state.update_map_end_offset(offset);
            state.take_snapshot(true).unwrap();
        }
        let tmp = dir().join("00000000000000000020.snapshot.tmp");
        fs.open(&tmp, OpenMode::CreateNew).unwrap();
        let mut state = manager(&fs);
        assert!(!fs.exists(&tmp).unwrap());
        assert_eq!(state.snapshot_offsets(), [5, 7, 10, 12, 15]);
        // Segments at 0, 5 and 10: 7 and 12 are strays; 15 is above every base (a clean close).
        state.remove_stray_snapshots(&[0, 5, 10]).unwrap();
        assert_eq!(state.snapshot_offsets(), [5, 10, 15]);
        state.truncate_and_reload(5, 12).unwrap();
        assert_eq!(state.snapshot_offsets(), [10]);
        assert_eq!(state.map_end_offset(), 10);
        state.delete_snapshots_before(11).unwrap();
        assert_eq!(state.snapshot_offsets(), Vec::<i64>::new());
        let files: Vec<PathBuf> = fs.list(&dir()).unwrap();
        assert!(files.is_empty(), "{files:?}");
    }

    /// A snapshot taken unsynced is handed to the next flush; without it, a power loss may lose
    /// it, and what survives is either the whole file or nothing valid.
    #[test]
    fn unsynced_snapshots_are_handed_to_the_flush() {
        let fs = SimFs::new();
        let mut state = manager(&fs);
        for ancestor in dir().ancestors() {
            fs.sync_dir(ancestor).unwrap();
        }
        state.update(1, 0, batch(0, 0, 0));
        state.update_map_end_offset(1);
        state.take_snapshot(false).unwrap();
        let unsynced = state.take_unsynced_snapshots();
        assert_eq!(unsynced, [dir().join("00000000000000000001.snapshot")]);
        assert!(state.take_unsynced_snapshots().is_empty());
        fs.open(&unsynced[0], OpenMode::ReadWrite).unwrap().sync_data().unwrap();
        fs.sync_dir(&dir()).unwrap();
        drop(state);
        fs.crash(3);
        let mut reloaded = manager(&fs);
        reloaded.truncate_and_reload(0, 1).unwrap();
        assert_eq!(reloaded.last_entry(1), Some((0, Some(batch(0, 0, 0)))));
    }

    /// A data batch through the checks a leader append runs, then recorded.
    fn data(
        state: &mut ProducerStateManager,
        producer_id: i64,
        epoch: i16,
        seq: i32,
        offset: i64,
        is_transactional: bool,
    ) -> Result<(), ValidationError> {
        state.check(producer_id, epoch, seq, seq)?;
        state.check_txn_state(producer_id, offset, is_transactional)?;
        state.update_data(producer_id, epoch, batch(seq, seq, offset), is_transactional);
        state.update_map_end_offset(offset + 1);
        Ok(())
    }

    /// A COMMIT (or ABORT) marker through the checks, then recorded and its transaction
    /// completed.
    fn end_txn(
        state: &mut ProducerStateManager,
        producer_id: i64,
        epoch: i16,
        is_abort: bool,
        offset: i64,
        coordinator_epoch: i32,
    ) -> Result<Option<CompletedTxn>, ValidationError> {
        let marker = TxnMarker {
            producer_id,
            producer_epoch: epoch,
            coordinator_epoch,
            offset,
            timestamp: 5_000 + offset,
            is_abort,
        };
        state.check_end_txn_marker(&marker)?;
        let completed = state.update_end_txn_marker(&marker);
        if let Some(completed) = &completed {
            state.complete_txn(completed);
        }
        state.update_map_end_offset(offset + 1);
        Ok(completed)
    }

    /// Begin, commit and abort: a transactional batch opens a transaction at its offset, later
    /// ones continue it, a marker closes it with a `CompletedTxn` (Kafka's `testSkipEmptyTransactions`
    /// without the append batching), and markers of empty transactions complete nothing.
    #[test]
    fn transactions_begin_at_their_first_batch_and_end_at_a_marker() {
        let mut state = manager(&SimFs::new());
        data(&mut state, 1, 0, 0, 16, true).unwrap();
        data(&mut state, 1, 0, 1, 17, true).unwrap();
        assert_eq!(state.current_txn_first_offset(1), Some(16));
        assert_eq!(state.ongoing_txns(), [(16, 1)]);
        assert_eq!(state.first_unstable_offset(), Some(16));
        let commit = end_txn(&mut state, 1, 0, false, 21, 0).unwrap();
        assert_eq!(
            commit,
            Some(CompletedTxn {
                producer_id: 1,
                first_offset: 16,
                last_offset: 21,
                is_aborted: false
            })
        );
        assert_eq!(state.current_txn_first_offset(1), None);
        // Completed but above the high watermark: still unstable.
        assert_eq!(
            (state.first_undecided_offset(), state.first_unstable_offset()),
            (None, Some(16))
        );
        state.on_high_watermark_updated(22);
        assert_eq!(state.first_unstable_offset(), None);
        // Empty transactions: markers with nothing open complete nothing.
        assert_eq!(end_txn(&mut state, 1, 0, false, 22, 0).unwrap(), None);
        assert_eq!(end_txn(&mut state, 1, 0, true, 23, 0).unwrap(), None);
        data(&mut state, 1, 0, 2, 24, true).unwrap();
        let abort = end_txn(&mut state, 1, 0, true, 28, 0).unwrap();
        assert_eq!(
            abort,
            Some(CompletedTxn {
                producer_id: 1,
                first_offset: 24,
                last_offset: 28,
                is_aborted: true
            })
        );
        data(&mut state, 1, 0, 3, 30, true).unwrap();
        state.on_high_watermark_updated(32);
        assert_eq!(state.first_unstable_offset(), Some(30));
        // Markers do not touch sequences: the next batch follows the last data batch.
        assert_eq!(state.last_entry(1).map(|(_, last)| last.map(|b| b.last_seq)), Some(Some(3)));
    }

    /// `testNonTransactionalAppendWithOngoingTransaction`: INVALID_TXN_STATE, and nothing changes.
    #[test]
    fn a_non_transactional_batch_inside_a_transaction_is_invalid_txn_state() {
        let mut state = manager(&SimFs::new());
        data(&mut state, 1, 0, 0, 0, true).unwrap();
        let refused = data(&mut state, 1, 0, 1, 1, false);
        assert_eq!(refused.map_err(|e| e.error_name()), Err("INVALID_TXN_STATE"));
        assert_eq!(state.current_txn_first_offset(1), Some(0));
        // Another producer is not affected, and after the marker the producer may go on
        // without a transaction.
        data(&mut state, 2, 0, 0, 1, false).unwrap();
        end_txn(&mut state, 1, 0, false, 2, 0).unwrap();
        data(&mut state, 1, 0, 1, 3, false).unwrap();
        assert_eq!(state.ongoing_txns(), []);
    }

    /// `testOldEpochForControlRecord`, `testCoordinatorFencing`, `testControlRecordBumpsProducerEpoch`,
    /// `testProducerStateAfterFencingAbortMarker`.
    #[test]
    fn markers_check_the_producer_and_coordinator_epochs() {
        let mut state = manager(&SimFs::new());
        data(&mut state, 1, 5, 0, 99, true).unwrap();
        assert_eq!(
            end_txn(&mut state, 1, 4, false, 100, 0),
            Err(ValidationError::InvalidProducerEpoch {
                producer_id: 1,
                epoch: 4,
                current_epoch: 5
            })
        );
        assert_eq!(state.current_txn_first_offset(1), Some(99), "a refused marker changes nothing");
        end_txn(&mut state, 1, 5, false, 100, 1).unwrap();
        assert_eq!(state.active_producers()[0].coordinator_epoch, 1);
        // The same coordinator epoch and a newer one are allowed; an older one is fenced.
        end_txn(&mut state, 1, 5, false, 101, 1).unwrap();
        end_txn(&mut state, 1, 5, false, 102, 2).unwrap();
        let fenced = end_txn(&mut state, 1, 5, false, 103, 1);
        assert_eq!(fenced.map_err(|e| e.error_code()), Err(52));
        // A fencing ABORT at a bumped epoch ends the transaction and forgets the old batches:
        // the producer starts again at sequence 0 of the new epoch.
        data(&mut state, 1, 5, 1, 104, true).unwrap();
        let abort = end_txn(&mut state, 1, 6, true, 105, 2).unwrap();
        assert_eq!(abort.map(|txn| (txn.first_offset, txn.is_aborted)), Some((104, true)));
        assert_eq!(state.last_entry(1), Some((6, None)));
        assert_eq!(
            state.check(1, 6, 2, 2),
            Err(ValidationError::OutOfOrderSequence { producer_id: 1, expected: 0, found: 2 })
        );
        data(&mut state, 1, 6, 0, 106, false).unwrap();
    }

    /// `testAppendTxnMarkerWithNoProducerState`: a marker is the producer's only trace; it
    /// still fences older epochs.
    #[test]
    fn a_marker_of_an_unknown_producer_is_accepted_and_fences() {
        let mut state = manager(&SimFs::new());
        assert_eq!(end_txn(&mut state, 1, 2, false, 27, 3).unwrap(), None);
        assert_eq!(
            state.active_producers(),
            [ActiveProducer {
                producer_id: 1,
                producer_epoch: 2,
                last_sequence: -1,
                last_timestamp: 5_027,
                coordinator_epoch: 3,
                current_txn_start_offset: -1,
            }]
        );
        assert_eq!(
            state.check(1, 0, 0, 0),
            Err(ValidationError::InvalidProducerEpoch {
                producer_id: 1,
                epoch: 0,
                current_epoch: 2
            })
        );
        assert_eq!(
            state.check(1, 2, 17, 17),
            Err(ValidationError::OutOfOrderSequence { producer_id: 1, expected: 0, found: 17 })
        );
        data(&mut state, 1, 2, 0, 39, false).unwrap();
    }

    /// `testFirstUnstableOffset` and `testLastStableOffsetCompletedTxn`: the first unstable
    /// offset waits for the high watermark to pass each marker; an aborted transaction's index
    /// entry gets the first offset of the earliest other open transaction.
    #[test]
    fn first_unstable_and_last_stable_offsets_of_completed_transactions() {
        let mut state = manager(&SimFs::new());
        assert_eq!(state.first_undecided_offset(), None);
        data(&mut state, 1, 5, 0, 99, true).unwrap();
        data(&mut state, 2, 5, 0, 105, true).unwrap();
        assert_eq!(
            (state.first_undecided_offset(), state.first_unstable_offset()),
            (Some(99), Some(99))
        );
        end_txn(&mut state, 1, 5, false, 109, 0).unwrap();
        assert_eq!(
            (state.first_undecided_offset(), state.first_unstable_offset()),
            (Some(105), Some(99))
        );
        state.on_high_watermark_updated(100);
        assert_eq!(state.first_unstable_offset(), Some(99));
        state.on_high_watermark_updated(110);
        assert_eq!(state.first_unstable_offset(), Some(105));
        end_txn(&mut state, 2, 5, true, 112, 0).unwrap();
        assert_eq!(
            (state.first_undecided_offset(), state.first_unstable_offset()),
            (None, Some(105))
        );
        state.on_high_watermark_updated(113);
        assert_eq!(state.first_unstable_offset(), None);

        let mut state = manager(&SimFs::new());
        let (start1, start2, start3) = (992_342, 992_367, 992_399);
        data(&mut state, 1, 0, 0, start1, true).unwrap();
        data(&mut state, 2, 0, 0, start2, true).unwrap();
        data(&mut state, 3, 0, 0, start3, true).unwrap();
        let txn1 = CompletedTxn {
            producer_id: 1,
            first_offset: start1,
            last_offset: start3 + 15,
            is_aborted: false,
        };
        assert_eq!(state.last_stable_offset_of(&txn1), start2);
        state.complete_txn(&txn1);
        state.on_high_watermark_updated(txn1.last_offset + 1);
        assert_eq!(state.first_unstable_offset(), Some(start2));
        let txn3 = CompletedTxn {
            producer_id: 3,
            first_offset: start3,
            last_offset: txn1.last_offset + 20,
            is_aborted: false,
        };
        assert_eq!(state.last_stable_offset_of(&txn3), start2);
        state.complete_txn(&txn3);
        state.on_high_watermark_updated(txn3.last_offset + 1);
        assert_eq!(state.first_unstable_offset(), Some(start2));
        let txn2 = CompletedTxn {
            producer_id: 2,
            first_offset: start2,
            last_offset: txn3.last_offset + 78,
            is_aborted: false,
        };
        assert_eq!(state.last_stable_offset_of(&txn2), txn2.last_offset + 1);
        state.complete_txn(&txn2);
        state.on_high_watermark_updated(txn2.last_offset + 1);
        assert_eq!(state.first_unstable_offset(), None);
    }

    /// `testRecoverFromSnapshotUnfinishedTransaction`, `...FinishedTransaction`,
    /// `...EmptyTransaction`, `testCoordinatorFencedAfterReload`, `testFirstUnstableOffsetAfterTruncation`:
    /// a snapshot keeps the open transaction and the coordinator epoch, byte for byte in Kafka's
    /// fields.
    #[test]
    fn snapshots_keep_open_transactions_and_coordinator_epochs() {
        let fs = SimFs::new();
        let mut state = manager(&fs);
        data(&mut state, 1, 0, 0, 0, true).unwrap();
        data(&mut state, 1, 0, 1, 1, true).unwrap();
        data(&mut state, 2, 0, 0, 2, true).unwrap();
        end_txn(&mut state, 2, 0, true, 3, 7).unwrap();
        assert!(state.take_snapshot(true).unwrap());
        let bytes = crate::io::read_all(
            fs.open(&dir().join("00000000000000000004.snapshot"), OpenMode::Read).unwrap().as_ref(),
        )
        .unwrap();
        let entries = decode_producer_snapshot(&bytes).unwrap();
        assert_eq!(
            entries
                .iter()
                .map(|e| (e.producer_id, e.coordinator_epoch, e.current_txn_first_offset))
                .collect::<Vec<_>>(),
            [(1, -1, 0), (2, 7, -1)]
        );
        assert_eq!(entries[1].timestamp, 5_003, "the marker's timestamp is the producer's last");
        let mut reloaded = manager(&fs);
        reloaded.truncate_and_reload(0, 4).unwrap();
        assert_eq!(reloaded.current_txn_first_offset(1), Some(0));
        assert_eq!(reloaded.ongoing_txns(), [(0, 1)]);
        assert_eq!(reloaded.first_unstable_offset(), Some(0));
        data(&mut reloaded, 1, 0, 2, 4, true).unwrap();
        assert_eq!(reloaded.current_txn_first_offset(1), Some(0), "the same transaction goes on");
        let fenced = end_txn(&mut reloaded, 2, 0, false, 5, 6);
        assert_eq!(fenced.map_err(|e| e.error_name()), Err("TRANSACTION_COORDINATOR_FENCED"));
        // A truncation back below the commit reopens the transaction from the older snapshot.
        end_txn(&mut reloaded, 1, 0, false, 5, 0).unwrap();
        reloaded.on_high_watermark_updated(6);
        assert_eq!(reloaded.first_unstable_offset(), None);
        assert!(reloaded.take_snapshot(true).unwrap());
        reloaded.truncate_and_reload(0, 5).unwrap();
        assert_eq!(reloaded.ongoing_txns(), [(0, 1)]);
        assert_eq!(reloaded.first_unstable_offset(), Some(0));
    }

    #[test]
    fn truncate_fully_deletes_every_snapshot() {
        let fs = SimFs::new();
        let mut state = manager(&fs);
        state.update_data(1, 0, batch(0, 0, 0), true);
        state.update_map_end_offset(1);
        state.take_snapshot(true).unwrap();
        state.truncate_fully_and_start_at(30).unwrap();
        assert!(state.is_empty());
        assert_eq!((state.ongoing_txns(), state.first_unstable_offset()), (vec![], None));
        assert_eq!((state.map_end_offset(), state.latest_snapshot_offset()), (30, None));
        assert!(fs.list(&dir()).unwrap().is_empty());
    }
}
