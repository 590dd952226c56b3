//! `.log` objects read in fixed chunks held in memory within a byte bound, least recently used
//! out: a consumer reading a remote segment from its start costs one GET per chunk rather than
//! one per fetch response, and the next fetch's bytes are usually there already.

use std::collections::BTreeMap;
use std::sync::Mutex;

use bytes::{Bytes, BytesMut};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::error::{RemoteError, Result};
use crate::layout::SegmentId;

#[derive(Debug, Default)]
struct Chunks {
    /// (segment, chunk index) -> (last use, bytes).
    entries: BTreeMap<(SegmentId, u64), (u64, Bytes)>,
    bytes: usize,
    clock: u64,
}

/// Chunks of remote `.log` objects, shared by every partition's reader of a broker (segment
/// ids are unique), at most `bytes_max` bytes of them.
#[derive(Debug)]
pub struct RemoteChunkCache {
    chunks: Mutex<Chunks>,
    chunk_bytes: u64,
    bytes_max: usize,
}

impl RemoteChunkCache {
    /// A cache of chunks of `chunk_bytes` (at least 1), at most `bytes_max` bytes in all.
    pub fn new(chunk_bytes: u64, bytes_max: usize) -> Self {
        Self { chunks: Mutex::new(Chunks::default()), chunk_bytes: chunk_bytes.max(1), bytes_max }
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Chunks> {
        self.chunks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn cached(&self, id: SegmentId, idx: u64) -> Option<Bytes> {
        let mut chunks = self.lock();
        chunks.clock += 1;
        let clock = chunks.clock;
        let (used, bytes) = chunks.entries.get_mut(&(id, idx))?;
        *used = clock;
        Some(bytes.clone())
    }

    fn insert(&self, id: SegmentId, idx: u64, bytes: &Bytes) {
        if bytes.len() > self.bytes_max {
            return;
        }
        let mut chunks = self.lock();
        while chunks.bytes + bytes.len() > self.bytes_max {
            let Some((&oldest, _)) = chunks.entries.iter().min_by_key(|(_, (used, _))| *used)
            else {
                break;
            };
            if let Some((_, evicted)) = chunks.entries.remove(&oldest) {
                chunks.bytes -= evicted.len();
            }
        }
        chunks.clock += 1;
        let clock = chunks.clock;
        chunks.bytes += bytes.len();
        if let Some((_, replaced)) = chunks.entries.insert((id, idx), (clock, bytes.clone())) {
            chunks.bytes -= replaced.len();
        }
    }

    /// Bytes `start..end` of the object `key` (segment `id`, `object_bytes` long), from the
    /// chunks that hold them, each fetched whole the first time.
    pub(crate) async fn read(
        &self,
        store: &dyn ObjectStore,
        key: &Path,
        id: SegmentId,
        object_bytes: u64,
        range: std::ops::Range<u64>,
    ) -> Result<Bytes> {
        let size = self.chunk_bytes;
        let (first, last) = (range.start / size, range.end.saturating_sub(1) / size);
        let mut parts = Vec::new();
        for idx in first..=last {
            let chunk = if let Some(chunk) = self.cached(id, idx) {
                chunk
            } else {
                let lo = idx * size;
                let hi = (lo + size).min(object_bytes);
                let chunk = store
                    .get_range(key, lo..hi)
                    .await
                    .map_err(|source| RemoteError::store("get", key, source))?;
                self.insert(id, idx, &chunk);
                chunk
            };
            let lo = idx * size;
            let from = usize::try_from(range.start.saturating_sub(lo)).unwrap_or(usize::MAX);
            let to = usize::try_from(range.end - lo).unwrap_or(usize::MAX).min(chunk.len());
            parts.push(chunk.slice(from.min(to)..to));
        }
        if parts.len() == 1 {
            return Ok(parts.pop().unwrap_or_default());
        }
        let mut joined = BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
        for part in parts {
            joined.extend_from_slice(&part);
        }
        Ok(joined.freeze())
    }
}
