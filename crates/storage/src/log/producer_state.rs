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
    /// Transactional writes being verified with a remote coordinator (KIP-890's verification
    /// guards, Kafka's `VerificationStateEntry`): producer id -> guard. In memory only, at most
    /// [`VERIFICATIONS_MAX`]; a marker or the transaction's first append ends one.
    verifications: BTreeMap<i64, u64>,
    /// The last guard handed out.
    last_guard: u64,
}

/// The most transactional writes under verification at once in one partition.
pub const VERIFICATIONS_MAX: usize = 4096;

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
            verifications: BTreeMap::new(),
            last_guard: 0,
        })
    }

    /// Starts the verification of a transactional write of `producer_id` (Kafka's
    /// `maybeCreateVerificationStateEntry`): its guard, the one already out if another write is
    /// being verified. Past [`VERIFICATIONS_MAX`] the oldest verification is dropped (its write
    /// is then refused as INVALID_TXN_STATE).
    pub fn start_verification(&mut self, producer_id: i64) -> u64 {
        if let Some(guard) = self.verifications.get(&producer_id) {
            return *guard;
        }
        if self.verifications.len() >= VERIFICATIONS_MAX
            && let Some(oldest) =
                self.verifications.iter().min_by_key(|(_, g)| **g).map(|(p, _)| *p)
        {
            self.verifications.remove(&oldest);
        }
        self.last_guard += 1;
        self.verifications.insert(producer_id, self.last_guard);
        self.last_guard
    }

    /// Checks a verified transactional write (Kafka's `UnifiedLog.append` with a verification
    /// guard): a producer with a transaction open here needs none; otherwise its guard must
    /// still be the one handed out, so a write verified before a marker ended the transaction
    /// (the coordinator aborted it meanwhile) cannot open a transaction nobody will end.
    pub fn check_verification(
        &self,
        producer_id: i64,
        guard: Option<u64>,
    ) -> Result<(), ValidationError> {
        let Some(guard) = guard else { return Ok(()) };
        if self.current_txn_first_offset(producer_id).is_some()
            || self.verifications.get(&producer_id) == Some(&guard)
        {
            return Ok(());
        }
        Err(ValidationError::InvalidTxnState {
            message: format!(
                "Transaction verification of producer {producer_id} is no longer valid: the \
                 transaction ended after it was verified"
            ),
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
            self.verifications.remove(&producer_id);
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
        self.verifications.remove(&marker.producer_id);
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
        self.verifications.clear();
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
#[path = "producer_state_tests.rs"]
mod tests;
