//! Metadata snapshots on disk, as Kafka names them: `<end offset, 20 digits>-<epoch, 10
//! digits>.checkpoint` beside the metadata log's segments, record batches inside (Kafka's
//! `FileRawSnapshot`). The first batch holds one record keyed `seglog.raft.snapshot`: openraft's
//! snapshot meta (last log id, membership) and the next metadata offset, as JSON; the batches
//! after it hold the metadata records that rebuild the image. A file is written whole
//! (`write_atomically`: temporary file, fsync, rename, directory fsync) before openraft may
//! purge the log below it; the newest two are kept.

use std::path::PathBuf;
use std::sync::Arc;

use openraft::{BasicNode, SnapshotMeta};
use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};
use seglog_storage::dirs::checkpoint::write_atomically;
use seglog_storage::io::{Fs, OpenMode};
use serde::{Deserialize, Serialize};

use super::NodeId;

const META_KEY: &[u8] = b"seglog.raft.snapshot";
const SUFFIX: &str = ".checkpoint";
const RECORDS_PER_BATCH: usize = 1_000;
const KEPT: usize = 2;

/// What the first batch of a snapshot file says.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Header {
    meta: SnapshotMeta<NodeId, BasicNode>,
    next_offset: i64,
}

/// A snapshot as read back.
#[derive(Debug, Clone)]
pub struct StoredSnapshot {
    pub meta: SnapshotMeta<NodeId, BasicNode>,
    pub next_offset: i64,
    /// Framed metadata records.
    pub records: Vec<Vec<u8>>,
}

/// The snapshot files of one metadata log directory.
#[derive(Debug, Clone)]
pub struct SnapshotFiles {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
}

fn name(next_offset: i64, term: u64) -> String {
    format!("{next_offset:020}-{term:010}{SUFFIX}")
}

impl SnapshotFiles {
    /// The files in `dir` (the `__cluster_metadata-0` directory).
    pub fn new(fs: Arc<dyn Fs>, dir: PathBuf) -> Self {
        Self { fs, dir }
    }

    /// Writes a snapshot durably, then removes all but the newest [`KEPT`].
    pub fn write(&self, snapshot: &StoredSnapshot) -> Result<(), String> {
        let term = snapshot.meta.last_log_id.map_or(0, |id| id.leader_id.term);
        let header = Header { meta: snapshot.meta.clone(), next_offset: snapshot.next_offset };
        let header = serde_json::to_vec(&header).map_err(|e| e.to_string())?;
        let mut bytes = Vec::new();
        let mut builder = RecordBatchBuilder::new(Compression::None);
        builder.push(-1, Some(META_KEY), Some(&header), &[]).map_err(|e| e.to_string())?;
        bytes.extend(builder.build().map_err(|e| e.to_string())?);
        let mut offset = 1;
        for chunk in snapshot.records.chunks(RECORDS_PER_BATCH) {
            let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(offset);
            for record in chunk {
                builder.push(-1, None, Some(record), &[]).map_err(|e| e.to_string())?;
            }
            offset += i64::try_from(chunk.len()).unwrap_or(0);
            bytes.extend(builder.build().map_err(|e| e.to_string())?);
        }
        let path = self.dir.join(name(snapshot.next_offset, term));
        write_atomically(self.fs.as_ref(), &path, &bytes).map_err(|e| e.to_string())?;
        let mut files = self.files()?;
        files.sort();
        while files.len() > KEPT {
            let old = files.remove(0);
            self.fs.remove(&old).map_err(|e| format!("{}: {e}", old.display()))?;
        }
        Ok(())
    }

    fn files(&self) -> Result<Vec<PathBuf>, String> {
        let listed = self.fs.list(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        Ok(listed
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(SUFFIX) && n.len() == 20 + 1 + 10 + SUFFIX.len())
            })
            .collect())
    }

    /// The newest snapshot that reads whole; `None` when there is none.
    pub fn latest(&self) -> Result<Option<StoredSnapshot>, String> {
        let mut files = self.files()?;
        files.sort();
        for path in files.iter().rev() {
            match self.read(path) {
                Ok(snapshot) => return Ok(Some(snapshot)),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "metadata snapshot unreadable, trying an older one");
                }
            }
        }
        Ok(None)
    }

    fn read(&self, path: &std::path::Path) -> Result<StoredSnapshot, String> {
        let file = self.fs.open(path, OpenMode::Read).map_err(|e| e.to_string())?;
        let bytes = seglog_storage::io::read_all(file.as_ref()).map_err(|e| e.to_string())?;
        let mut header: Option<Header> = None;
        let mut records = Vec::new();
        for item in Batches::new(&bytes) {
            let batch = item.map_err(|e| e.to_string())?.batch;
            batch.validate().map_err(|e| e.to_string())?;
            let decoded = batch.records(DecodeLimits::default()).map_err(|e| e.to_string())?;
            for record in &decoded {
                let record = record.map_err(|e| e.to_string())?;
                if record.key == Some(META_KEY) {
                    let value = record.value.unwrap_or_default();
                    header = Some(serde_json::from_slice(value).map_err(|e| e.to_string())?);
                } else {
                    records.push(record.value.unwrap_or_default().to_vec());
                }
            }
        }
        let header = header.ok_or("no snapshot header")?;
        Ok(StoredSnapshot { meta: header.meta, next_offset: header.next_offset, records })
    }
}
