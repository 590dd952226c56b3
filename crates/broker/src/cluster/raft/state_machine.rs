//! Raft's state machine: the [`Controller`]'s committed image, fed the records of each
//! committed entry in order (Kafka's `MetadataLoader` feeding the image). A record that does not
//! decode or fit is a storage error: openraft stops the node rather than skip it.
//!
//! A snapshot is Kafka's idea of a metadata `.checkpoint`: the records that rebuild the image
//! ([`MetadataImage::to_records`]), with the next metadata offset, kept on disk
//! ([`super::snapshot_file`]) before the log below it may go; a restart starts from the newest.

#![expect(
    clippy::result_large_err,
    reason = "openraft's traits return its StorageError; the helpers return it too"
)]

use std::io::Cursor;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    AnyError, Entry, EntryPayload, LogId, OptionalSend, RaftSnapshotBuilder, SnapshotMeta,
    StorageError, StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};

use super::log_store::MetadataLogStore;
use super::snapshot_file::{SnapshotFiles, StoredSnapshot};
use super::{CommandApplied, MetadataRaftConfig, NodeId};
use crate::cluster::controller::{Controller, ControllerConfig};
use crate::cluster::image::MetadataImage;
use crate::cluster::records::MetadataRecord;

type SmResult<T> = Result<T, StorageError<NodeId>>;

fn apply_error(log_id: LogId<NodeId>, error: impl ToString) -> StorageError<NodeId> {
    StorageError::IO { source: StorageIOError::apply(log_id, AnyError::error(error)) }
}

fn snapshot_error(error: impl ToString) -> StorageError<NodeId> {
    StorageError::IO { source: StorageIOError::read_snapshot(None, AnyError::error(error)) }
}

/// A snapshot's body.
#[derive(Debug, Serialize, Deserialize)]
struct SnapshotBody {
    next_offset: i64,
    records: Vec<Vec<u8>>,
}

#[derive(Debug)]
struct Inner {
    controller: Controller,
    last_applied: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, openraft::BasicNode>,
    /// The metadata offset the next record gets (one per record, blank and membership entries
    /// one each, as their batches take in the log).
    next_offset: i64,
    snapshot: Option<(SnapshotMeta<NodeId, openraft::BasicNode>, Vec<u8>)>,
    snapshot_idx: u64,
    /// The log, restarted at an installed snapshot's end.
    log: MetadataLogStore,
    /// Where snapshots are kept.
    files: SnapshotFiles,
}

/// The state machine, shared with the node that decides on the leader.
#[derive(Debug, Clone)]
pub struct MetadataStateMachine {
    inner: Arc<Mutex<Inner>>,
}

impl MetadataStateMachine {
    /// The state machine over `log`'s entries, starting from the newest snapshot in `files`
    /// (openraft then applies the committed entries after it).
    pub fn open(
        config: ControllerConfig,
        log: MetadataLogStore,
        files: SnapshotFiles,
    ) -> Result<Self, String> {
        let mut inner = Inner {
            controller: Controller::new(config),
            last_applied: None,
            membership: StoredMembership::default(),
            next_offset: 0,
            snapshot: None,
            snapshot_idx: 0,
            log,
            files,
        };
        if let Some(stored) = inner.files.latest()? {
            inner.load(&stored)?;
        }
        Ok(Self { inner: Arc::new(Mutex::new(inner)) })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `decide` on the controller (its committed image), under the state machine's lock.
    pub fn with_controller<T>(&self, decide: impl FnOnce(&mut Controller, i64) -> T) -> T {
        let mut inner = self.lock();
        let next_offset = inner.next_offset;
        decide(&mut inner.controller, next_offset)
    }

    /// The offset after the batch of the entry at `index` (Kafka's offsets for Raft's indexes).
    pub fn end_offset_of(&self, index: u64) -> Option<i64> {
        let log = self.lock().log.clone();
        log.end_offset_of(index)
    }

    /// Reads the committed image without copying it.
    pub fn with_image<T>(&self, read: impl FnOnce(&MetadataImage) -> T) -> T {
        read(self.lock().controller.image())
    }

    /// A copy of the committed image.
    pub fn image(&self) -> MetadataImage {
        self.lock().controller.image().clone()
    }

    /// The metadata offset of the last record applied (-1 before any): what a broker's
    /// heartbeat reports as its `current_metadata_offset`.
    pub fn applied_offset(&self) -> i64 {
        self.lock().next_offset - 1
    }

    /// The last applied Raft index.
    pub fn last_applied_index(&self) -> Option<u64> {
        self.lock().last_applied.map(|id| id.index)
    }
}

impl Inner {
    fn apply_entry(&mut self, entry: &Entry<MetadataRaftConfig>) -> SmResult<CommandApplied> {
        let first_offset = self.next_offset;
        match &entry.payload {
            EntryPayload::Blank => self.next_offset += 1,
            EntryPayload::Membership(membership) => {
                self.membership = StoredMembership::new(Some(entry.log_id), membership.clone());
                self.next_offset += 1;
            }
            EntryPayload::Normal(command) => {
                for bytes in &command.records {
                    let record =
                        MetadataRecord::decode(bytes).map_err(|e| apply_error(entry.log_id, e))?;
                    self.controller
                        .replay(self.next_offset, &record)
                        .map_err(|e| apply_error(entry.log_id, e))?;
                    self.next_offset += 1;
                }
            }
        }
        self.last_applied = Some(entry.log_id);
        Ok(CommandApplied { first_offset })
    }

    fn build(&mut self) -> SmResult<Snapshot<MetadataRaftConfig>> {
        let image = self.controller.image();
        let records = image.to_records().iter().map(MetadataRecord::encode).collect();
        let body = SnapshotBody { next_offset: self.next_offset, records };
        let bytes = serde_json::to_vec(&body).map_err(snapshot_error)?;
        self.snapshot_idx += 1;
        let records = body.records;
        let meta = SnapshotMeta {
            last_log_id: self.last_applied,
            last_membership: self.membership.clone(),
            snapshot_id: format!(
                "{}-{}",
                self.last_applied.map_or(0, |id| id.index),
                self.snapshot_idx
            ),
        };
        // On disk before openraft may purge the log below it.
        let stored = StoredSnapshot { meta: meta.clone(), next_offset: self.next_offset, records };
        self.files.write(&stored).map_err(snapshot_error)?;
        self.snapshot = Some((meta.clone(), bytes.clone()));
        Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(bytes)) })
    }

    /// Takes the state of a stored snapshot.
    fn load(&mut self, stored: &StoredSnapshot) -> Result<(), String> {
        let mut records = Vec::with_capacity(stored.records.len());
        for bytes in &stored.records {
            records.push(MetadataRecord::decode(bytes).map_err(|e| e.to_string())?);
        }
        let image = MetadataImage::from_records(&records, stored.next_offset - 1)
            .map_err(|e| e.to_string())?;
        self.controller.reset(image);
        self.next_offset = stored.next_offset;
        self.last_applied = stored.meta.last_log_id;
        self.membership = stored.meta.last_membership.clone();
        let body =
            SnapshotBody { next_offset: stored.next_offset, records: stored.records.clone() };
        let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        self.snapshot = Some((stored.meta.clone(), bytes));
        Ok(())
    }

    fn install(
        &mut self,
        meta: &SnapshotMeta<NodeId, openraft::BasicNode>,
        bytes: &[u8],
    ) -> SmResult<()> {
        let body: SnapshotBody = serde_json::from_slice(bytes).map_err(snapshot_error)?;
        let stored = StoredSnapshot {
            meta: meta.clone(),
            next_offset: body.next_offset,
            records: body.records,
        };
        self.files.write(&stored).map_err(snapshot_error)?;
        self.load(&stored).map_err(snapshot_error)?;
        if let Some(last) = meta.last_log_id {
            self.log
                .start_after_snapshot(last.index, stored.next_offset)
                .map_err(snapshot_error)?;
        }
        Ok(())
    }
}

impl MetadataStateMachine {
    /// Runs `work` on tokio's blocking pool (it writes snapshot files).
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Inner) -> SmResult<T> + Send + 'static,
    ) -> SmResult<T> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            work(&mut inner.lock().unwrap_or_else(PoisonError::into_inner))
        })
        .await
        .map_err(snapshot_error)?
    }
}

impl RaftSnapshotBuilder<MetadataRaftConfig> for MetadataStateMachine {
    async fn build_snapshot(&mut self) -> SmResult<Snapshot<MetadataRaftConfig>> {
        self.blocking(Inner::build).await
    }
}

impl RaftStateMachine<MetadataRaftConfig> for MetadataStateMachine {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> SmResult<(Option<LogId<NodeId>>, StoredMembership<NodeId, openraft::BasicNode>)> {
        let inner = self.lock();
        Ok((inner.last_applied, inner.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> SmResult<Vec<CommandApplied>>
    where
        I: IntoIterator<Item = Entry<MetadataRaftConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut inner = self.lock();
        entries.into_iter().map(|entry| inner.apply_entry(&entry)).collect()
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> SmResult<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, openraft::BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> SmResult<()> {
        let meta = meta.clone();
        let bytes = snapshot.into_inner();
        self.blocking(move |inner| inner.install(&meta, &bytes)).await
    }

    async fn get_current_snapshot(&mut self) -> SmResult<Option<Snapshot<MetadataRaftConfig>>> {
        let inner = self.lock();
        Ok(inner.snapshot.as_ref().map(|(meta, bytes)| Snapshot {
            meta: meta.clone(),
            snapshot: Box::new(Cursor::new(bytes.clone())),
        }))
    }
}
