//! Reading records from the bucket at an offset (Kafka's `RemoteLogReader`): the manifest names
//! the segment, its offset index object (cached, within a byte bound) gives a position, and
//! one ranged GET of the `.log` object returns whole batches from there.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::{ObjectStore, ObjectStoreExt};
use seglog_format::batch::{LENGTH_OFFSET, LOG_OVERHEAD};
use seglog_format::index::{ABORTED_TXN_BYTES, AbortedTxn, OFFSET_INDEX_ENTRY_BYTES};
use seglog_format::{Batches, DecodeLimits, OffsetIndexEntry};

use crate::error::{RemoteError, Result};
use crate::layout::{ObjectKind, PartitionLayout, SegmentId};
use crate::manifest::{Manifest, SegmentEntry};

/// The smallest ranged GET: batches of up to this size come in one request.
const READ_WINDOW_BYTES_MIN: u64 = 64 * 1024;

mod chunks;
mod lru;
#[cfg(test)]
mod tests;

pub use chunks::RemoteChunkCache;
use lru::ByteLru;

/// The bytes read at a time when a segment is scanned for a timestamp.
const SCAN_BYTES: usize = 1 << 20;

/// A record found by timestamp in the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteTimestampOffset {
    /// Its timestamp.
    pub timestamp: i64,
    /// Its offset.
    pub offset: i64,
    /// Its batch's leader epoch (v2 batches).
    pub leader_epoch: Option<i32>,
}

/// Records read from a remote segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRead {
    /// The segment they come from.
    pub segment: SegmentEntry,
    /// Whole batches, the first holding the offset asked for; at least one batch, then as
    /// many as fit `max_bytes` (Kafka's `minOneMessage`).
    pub records: Bytes,
}

/// Remote offset indexes held in memory for any number of readers, within one byte bound
/// (Kafka's `RemoteIndexCache`, `remote.log.index.file.cache.total.size.bytes`); segment ids
/// are unique across partitions, so one cache serves a broker.
#[derive(Debug)]
pub struct RemoteIndexCache {
    entries: Mutex<ByteLru<SegmentId>>,
    bytes_max: usize,
}

impl RemoteIndexCache {
    /// A cache of at most `bytes_max` bytes.
    pub fn new(bytes_max: usize) -> Self {
        Self { entries: Mutex::new(ByteLru::default()), bytes_max }
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByteLru<SegmentId>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Reads a partition's remote segments.
#[derive(Debug)]
pub struct RemoteReader {
    layout: PartitionLayout,
    index_cache: Arc<RemoteIndexCache>,
    chunk_cache: Option<Arc<RemoteChunkCache>>,
}

impl RemoteReader {
    /// A reader of `layout`'s segments keeping at most `index_cache_bytes_max` bytes of offset
    /// indexes in a cache of its own.
    pub fn new(layout: PartitionLayout, index_cache_bytes_max: usize) -> Self {
        Self::sharing(layout, Arc::new(RemoteIndexCache::new(index_cache_bytes_max)))
    }

    /// A reader of `layout`'s segments whose offset indexes go into `index_cache`.
    pub fn sharing(layout: PartitionLayout, index_cache: Arc<RemoteIndexCache>) -> Self {
        Self { layout, index_cache, chunk_cache: None }
    }

    /// This reader, reading `.log` objects through `chunk_cache`.
    #[must_use]
    pub fn with_chunk_cache(mut self, chunk_cache: Arc<RemoteChunkCache>) -> Self {
        self.chunk_cache = Some(chunk_cache);
        self
    }

    /// Bytes of offset indexes held now (by every reader sharing the cache).
    pub fn index_cache_bytes(&self) -> usize {
        self.index_cache.bytes()
    }

    /// The batches from the one holding `offset`, up to `max_bytes` (at least one batch), from
    /// the segment of `manifest` that holds it; `None` when no committed segment does (below
    /// the remote log start, or at or past its end).
    pub async fn read(
        &self,
        store: &dyn ObjectStore,
        manifest: &Manifest,
        offset: i64,
        max_bytes: usize,
    ) -> Result<Option<RemoteRead>> {
        if offset < manifest.log_start_offset {
            return Ok(None);
        }
        let found = manifest.segments.partition_point(|entry| entry.last_offset < offset);
        if manifest.segments.get(found).is_none_or(|s| s.base_offset > offset) {
            return Ok(None);
        }
        // A compacted segment may end before the next one starts: an offset in that stretch
        // is served from the next segment's first batch, as a local read would.
        for segment in &manifest.segments[found..] {
            let from = offset.max(segment.base_offset);
            if let Some(read) = self.read_segment(store, segment, from, max_bytes).await? {
                return Ok(Some(read));
            }
        }
        Ok(None)
    }

    /// The first record at or after `target` (a timestamp) and at or after `starting_offset`,
    /// in the first segment whose largest timestamp reaches `target` (Kafka's
    /// `RemoteLogManager.findOffsetByTimestamp`, as a local segment's lookup): its timestamp,
    /// offset and the leader epoch of its batch. The segment's batches are scanned from its
    /// start (through the chunk cache when there is one).
    pub async fn find_offset_by_timestamp(
        &self,
        store: &dyn ObjectStore,
        manifest: &Manifest,
        target: i64,
        starting_offset: i64,
    ) -> Result<Option<RemoteTimestampOffset>> {
        let starting_offset = starting_offset.max(manifest.log_start_offset);
        let Some(segment) = manifest
            .segments
            .iter()
            .find(|entry| entry.max_timestamp_ms >= target && entry.last_offset >= starting_offset)
        else {
            return Ok(None);
        };
        let mut offset = starting_offset.max(segment.base_offset);
        while offset <= segment.last_offset {
            let Some(read) = self.read_segment(store, segment, offset, SCAN_BYTES).await? else {
                return Ok(None);
            };
            let key = || {
                self.layout.object_key(segment.base_offset, segment.id, ObjectKind::Log).to_string()
            };
            for entry in Batches::new(&read.records) {
                let batch = entry
                    .map_err(|error| RemoteError::Malformed {
                        key: key(),
                        reason: error.to_string(),
                    })?
                    .batch;
                offset = batch.next_offset();
                if batch.max_timestamp() < target {
                    continue;
                }
                let records = batch.records(DecodeLimits::default()).map_err(|error| {
                    RemoteError::Malformed { key: key(), reason: error.to_string() }
                })?;
                for record in &records {
                    let record = record.map_err(|e| RemoteError::Malformed {
                        key: key(),
                        reason: e.to_string(),
                    })?;
                    if record.timestamp >= target && record.offset >= starting_offset {
                        let epoch = batch.partition_leader_epoch();
                        return Ok(Some(RemoteTimestampOffset {
                            timestamp: record.timestamp,
                            offset: record.offset,
                            leader_epoch: (batch.magic() >= 2 && epoch >= 0).then_some(epoch),
                        }));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The aborted transactions a read_committed read of [`start_offset`,
    /// `upper_bound_offset`) skips, from the `.txnindex` objects of the remote segments from
    /// the one holding `start_offset` on (Kafka's `collectAbortedTransactions` over remote
    /// segments), and whether the search is complete: an entry whose last stable offset
    /// reaches the upper bound ends it; otherwise the local segments go on with it.
    pub async fn aborted_transactions(
        &self,
        store: &dyn ObjectStore,
        manifest: &Manifest,
        start_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<(Vec<AbortedTxn>, bool)> {
        let found = manifest.segments.partition_point(|entry| entry.last_offset < start_offset);
        let mut aborted = Vec::new();
        for segment in &manifest.segments[found..] {
            if !segment.objects.contains(&ObjectKind::TxnIndex) {
                continue;
            }
            let key = self.layout.object_key(segment.base_offset, segment.id, ObjectKind::TxnIndex);
            let got =
                store.get(&key).await.map_err(|source| RemoteError::store("get", &key, source))?;
            let bytes =
                got.bytes().await.map_err(|source| RemoteError::store("get", &key, source))?;
            for chunk in bytes.chunks_exact(ABORTED_TXN_BYTES) {
                let entry = <&[u8; ABORTED_TXN_BYTES]>::try_from(chunk)
                    .map_err(|_| RemoteError::Malformed {
                        key: key.to_string(),
                        reason: "short entry".into(),
                    })
                    .and_then(|entry| {
                        AbortedTxn::decode(entry).map_err(|error| RemoteError::Malformed {
                            key: key.to_string(),
                            reason: error.to_string(),
                        })
                    })?;
                if entry.last_offset >= start_offset && entry.first_offset < upper_bound_offset {
                    aborted.push(entry);
                }
                if entry.last_stable_offset >= upper_bound_offset {
                    return Ok((aborted, true));
                }
            }
        }
        Ok((aborted, false))
    }

    /// The batches of `segment` from the one holding `offset` (or the first after it), or
    /// `None` when every batch of the segment ends below it.
    async fn read_segment(
        &self,
        store: &dyn ObjectStore,
        segment: &SegmentEntry,
        offset: i64,
        max_bytes: usize,
    ) -> Result<Option<RemoteRead>> {
        let position = self.index_position(store, segment, offset).await?;
        let log_key = self.layout.object_key(segment.base_offset, segment.id, ObjectKind::Log);
        let get = |start: u64, end: u64| {
            let key = log_key.clone();
            async move {
                match &self.chunk_cache {
                    Some(chunks) => {
                        chunks.read(store, &key, segment.id, segment.log_bytes, start..end).await
                    }
                    None => store
                        .get_range(&key, start..end)
                        .await
                        .map_err(|source| RemoteError::store("get", &key, source)),
                }
            }
        };
        let mut start = position;
        loop {
            if start >= segment.log_bytes {
                return Ok(None);
            }
            let window = (max_bytes as u64).max(READ_WINDOW_BYTES_MIN);
            let bytes = get(start, (start + window).min(segment.log_bytes)).await?;
            let mut batches = Batches::new(&bytes);
            let mut first_needed = None;
            let mut end = 0;
            for entry in batches.by_ref() {
                let entry = entry.map_err(|error| RemoteError::Malformed {
                    key: log_key.to_string(),
                    reason: format!("at position {start}: {error}"),
                })?;
                let entry_end = entry.position as usize + entry.batch.size_bytes();
                match first_needed {
                    None if entry.batch.last_offset() < offset => {}
                    None => {
                        first_needed = Some(entry.position as usize);
                        end = entry_end;
                    }
                    Some(first) if entry_end - first <= max_bytes => end = entry_end,
                    Some(_) => break,
                }
            }
            if let Some(first) = first_needed {
                return Ok(Some(RemoteRead {
                    segment: segment.clone(),
                    records: bytes.slice(first..end),
                }));
            }
            // The window ended inside or before the batch that holds the offset: go on from
            // the first batch not read whole.
            let next = start + batches.next_position();
            if next > start {
                start = next;
                continue;
            }
            // That batch is larger than the window: its length from its header, then the
            // batch whole, however large.
            let header_end = (start + LOG_OVERHEAD as u64).min(segment.log_bytes);
            let header = get(start, header_end).await?;
            let length = header
                .get(LENGTH_OFFSET..LOG_OVERHEAD)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(i32::from_be_bytes)
                .filter(|length| *length > 0)
                .ok_or_else(|| RemoteError::Malformed {
                    key: log_key.to_string(),
                    reason: format!("no batch header at position {start}"),
                })?;
            let end = (header_end + u64::from(length.unsigned_abs())).min(segment.log_bytes);
            let whole = get(start, end).await?;
            let last_offset = match Batches::new(&whole).next() {
                Some(Ok(entry)) => entry.batch.last_offset(),
                Some(Err(error)) => {
                    return Err(RemoteError::Malformed {
                        key: log_key.to_string(),
                        reason: format!("at position {start}: {error}"),
                    });
                }
                None => {
                    return Err(RemoteError::Malformed {
                        key: log_key.to_string(),
                        reason: format!("the batch at position {start} is cut short"),
                    });
                }
            };
            if last_offset >= offset {
                return Ok(Some(RemoteRead { segment: segment.clone(), records: whole }));
            }
            start = end;
        }
    }

    /// The position in the `.log` to scan from for `offset` (the largest index entry at or
    /// below it, or 0).
    async fn index_position(
        &self,
        store: &dyn ObjectStore,
        segment: &SegmentEntry,
        offset: i64,
    ) -> Result<u64> {
        if !segment.objects.contains(&ObjectKind::Index) {
            return Ok(0);
        }
        let index = self.index(store, segment).await?;
        let target = offset - segment.base_offset;
        let n_entries = index.len() / OFFSET_INDEX_ENTRY_BYTES;
        let key = || self.layout.object_key(segment.base_offset, segment.id, ObjectKind::Index);
        let entry_at = |entry_idx: usize| {
            OffsetIndexEntry::read(&index, entry_idx).map_err(|error| RemoteError::Malformed {
                key: key().to_string(),
                reason: error.to_string(),
            })
        };
        // Binary search for the last entry whose offset is at or below the target.
        let (mut low, mut high) = (0, n_entries);
        while low < high {
            let middle = low + (high - low) / 2;
            if i64::from(entry_at(middle)?.relative_offset) <= target {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        Ok(match low.checked_sub(1) {
            Some(entry_idx) => u64::from(entry_at(entry_idx)?.position),
            None => 0,
        })
    }

    /// The segment's offset index object, from the cache or the bucket.
    async fn index(&self, store: &dyn ObjectStore, segment: &SegmentEntry) -> Result<Bytes> {
        if let Some(bytes) = self.index_cache.lock().get(&segment.id) {
            return Ok(bytes);
        }
        let key = self.layout.object_key(segment.base_offset, segment.id, ObjectKind::Index);
        let got =
            store.get(&key).await.map_err(|source| RemoteError::store("get", &key, source))?;
        let bytes = got.bytes().await.map_err(|source| RemoteError::store("get", &key, source))?;
        self.index_cache.lock().insert(segment.id, &bytes, self.index_cache.bytes_max);
        Ok(bytes)
    }
}
