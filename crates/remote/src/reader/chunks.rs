//! `.log` objects read in fixed chunks held in memory within a byte bound, least recently used
//! out: a consumer reading a remote segment from its start costs one GET per chunk rather than
//! one per fetch response, and the next fetch's bytes are usually there already.

use std::sync::Mutex;

use bytes::{Bytes, BytesMut};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::ByteLru;
use crate::error::{RemoteError, Result};
use crate::layout::SegmentId;

/// Chunks of remote `.log` objects, shared by every partition's reader of a broker (segment
/// ids are unique), at most `bytes_max` bytes of them.
#[derive(Debug)]
pub struct RemoteChunkCache {
    chunks: Mutex<ByteLru<(SegmentId, u64)>>,
    chunk_bytes: u64,
    bytes_max: usize,
}

impl RemoteChunkCache {
    /// A cache of chunks of `chunk_bytes` (at least 1), at most `bytes_max` bytes in all.
    pub fn new(chunk_bytes: u64, bytes_max: usize) -> Self {
        Self { chunks: Mutex::new(ByteLru::default()), chunk_bytes: chunk_bytes.max(1), bytes_max }
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByteLru<(SegmentId, u64)>> {
        self.chunks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
            let cached = self.lock().get(&(id, idx));
            let chunk = if let Some(chunk) = cached {
                chunk
            } else {
                let lo = idx * size;
                let hi = (lo + size).min(object_bytes);
                let chunk = store
                    .get_range(key, lo..hi)
                    .await
                    .map_err(|source| RemoteError::store("get", key, source))?;
                self.lock().insert((id, idx), &chunk, self.bytes_max);
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
