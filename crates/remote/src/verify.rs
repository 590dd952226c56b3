//! Checking a partition's remote log against its bucket (what `seglog verify --remote`
//! prints): every manifest entry's objects exist, each `.log` object has the size and CRC-32C
//! the entry recorded, and the objects no entry names are listed.

use std::collections::BTreeSet;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::error::{RemoteError, Result};
use crate::layout::{ObjectKind, PartitionLayout};
use crate::writer::{find_orphans, read_manifest};

/// One way the bucket disagrees with its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteProblem {
    /// An object a manifest entry names is not in the bucket.
    Missing {
        /// Its key.
        key: Path,
    },
    /// A `.log` object whose size or CRC-32C is not the one its entry recorded.
    Damaged {
        /// Its key.
        key: Path,
        /// What differs, e.g. "16384 bytes, the manifest says 16390".
        reason: String,
    },
}

impl std::fmt::Display for RemoteProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing { key } => write!(f, "{key} is missing"),
            Self::Damaged { key, reason } => write!(f, "{key} is damaged: {reason}"),
        }
    }
}

/// What [`verify_remote`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoteReport {
    /// Committed segments checked.
    pub segments: usize,
    /// The remote log start and end offsets (end exclusive); both 0 without a manifest.
    pub offsets: (i64, i64),
    /// Entries whose objects are missing or damaged.
    pub problems: Vec<RemoteProblem>,
    /// Objects no entry names: what a crash between an upload and its commit, or between a
    /// commit and its deletions, left (or another writer's upload in flight).
    pub orphans: Vec<Path>,
}

impl RemoteReport {
    /// No missing or damaged object (orphans are not a problem: collection deletes them).
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Reads the partition's manifest and checks every entry against the bucket; each `.log` is
/// read whole to check its CRC-32C. A missing manifest is an empty report.
pub async fn verify_remote(
    store: &dyn ObjectStore,
    layout: &PartitionLayout,
) -> Result<RemoteReport> {
    let Some(manifest) = read_manifest(store, layout).await? else {
        return Ok(RemoteReport::default());
    };
    let mut report = RemoteReport {
        segments: manifest.segments.len(),
        offsets: (manifest.log_start_offset, manifest.end_offset()),
        ..RemoteReport::default()
    };
    for entry in &manifest.segments {
        for kind in &entry.objects {
            let key = layout.object_key(entry.base_offset, entry.id, *kind);
            if *kind != ObjectKind::Log {
                match store.head(&key).await {
                    Ok(_) => {}
                    Err(object_store::Error::NotFound { .. }) => {
                        report.problems.push(RemoteProblem::Missing { key });
                    }
                    Err(source) => return Err(RemoteError::store("head", &key, source)),
                }
                continue;
            }
            let bytes = match store.get(&key).await {
                Ok(got) => {
                    got.bytes().await.map_err(|source| RemoteError::store("get", &key, source))?
                }
                Err(object_store::Error::NotFound { .. }) => {
                    report.problems.push(RemoteProblem::Missing { key });
                    continue;
                }
                Err(source) => return Err(RemoteError::store("get", &key, source)),
            };
            let crc = crc32c::crc32c(&bytes);
            if bytes.len() as u64 != entry.log_bytes || crc != entry.log_crc32c {
                report.problems.push(RemoteProblem::Damaged {
                    reason: format!(
                        "{} bytes with CRC-32C {crc:#010x}, the manifest says {} bytes with {:#010x}",
                        bytes.len(),
                        entry.log_bytes,
                        entry.log_crc32c
                    ),
                    key,
                });
            }
        }
    }
    report.orphans = find_orphans(store, layout, &manifest, &BTreeSet::new()).await?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use object_store::memory::InMemory;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

    use super::*;
    use crate::manifest::Change;
    use crate::writer::{ManifestWriter, upload_segment};

    #[test]
    fn missing_and_damaged_objects_and_orphans_are_reported() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let layout = PartitionLayout::new("t", "orders", 0, "id");
            assert_eq!(
                verify_remote(store.as_ref(), &layout).await.unwrap(),
                RemoteReport::default()
            );
            let mut writer =
                ManifestWriter::acquire(Arc::clone(&store), layout.clone()).await.unwrap();
            let mut entries = Vec::new();
            for base in [0, 10, 20] {
                let objects = [
                    (ObjectKind::Log, Bytes::from(format!("log {base}"))),
                    (ObjectKind::Index, Bytes::from_static(b"index")),
                ];
                let entry = upload_segment(store.as_ref(), &layout, base, base + 9, 0, &objects)
                    .await
                    .unwrap();
                writer.commit(&Change::Add(entry.clone())).await.unwrap();
                entries.push(entry);
            }
            let clean = verify_remote(store.as_ref(), &layout).await.unwrap();
            assert!(clean.is_clean() && clean.orphans.is_empty(), "{clean:?}");
            assert_eq!((clean.segments, clean.offsets), (3, (0, 30)));
            // One index gone, one .log rewritten behind the manifest's back, one upload never
            // committed.
            let index = layout.object_key(0, entries[0].id, ObjectKind::Index);
            store.delete(&index).await.unwrap();
            let log = layout.object_key(10, entries[1].id, ObjectKind::Log);
            store.put(&log, PutPayload::from_static(b"log 11")).await.unwrap();
            let stray = upload_segment(
                store.as_ref(),
                &layout,
                30,
                39,
                0,
                &[(ObjectKind::Log, Bytes::from_static(b"x"))],
            )
            .await
            .unwrap();
            let report = verify_remote(store.as_ref(), &layout).await.unwrap();
            assert!(!report.is_clean());
            assert_eq!(report.problems.len(), 2, "{report:?}");
            assert_eq!(report.problems[0], RemoteProblem::Missing { key: index });
            let RemoteProblem::Damaged { key, reason } = &report.problems[1] else {
                panic!("not damaged: {report:?}");
            };
            assert_eq!(key, &log);
            assert!(reason.starts_with("6 bytes with CRC-32C 0x"), "{reason}");
            assert!(reason.contains("the manifest says 6 bytes with 0x"), "{reason}");
            assert_eq!(report.orphans, vec![layout.object_key(30, stray.id, ObjectKind::Log)]);
        });
    }
}
