//! Writing a partition's remote log: segment objects with create-only PUTs, the manifest with
//! conditional PUTs under a writer epoch, orphans found by listing, and the store's probe.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{
    Error as StoreError, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    UpdateVersion,
};

use crate::error::{RemoteError, Result};
use crate::layout::{ObjectKind, PartitionLayout, SegmentId};
use crate::manifest::{Change, Manifest, SegmentEntry};

/// How many times [`ManifestWriter::acquire`] reads and tries again when other writers change
/// the manifest between its read and its write.
const ACQUIRE_ATTEMPTS_MAX: u32 = 16;

/// The manifest as stored and the version to update it from; `None` if there is none.
async fn get_manifest(
    store: &dyn ObjectStore,
    layout: &PartitionLayout,
) -> Result<Option<(Manifest, UpdateVersion)>> {
    let key = layout.manifest_key();
    let got = match store.get(&key).await {
        Ok(got) => got,
        Err(StoreError::NotFound { .. }) => return Ok(None),
        Err(source) => return Err(RemoteError::store("get", &key, source)),
    };
    let version =
        UpdateVersion { e_tag: got.meta.e_tag.clone(), version: got.meta.version.clone() };
    let bytes = got.bytes().await.map_err(|source| RemoteError::store("get", &key, source))?;
    let manifest = Manifest::parse(key.as_ref(), &bytes)?;
    if (manifest.topic.as_str(), manifest.partition, manifest.topic_id.as_str())
        != (layout.topic.as_str(), layout.partition, layout.topic_id.as_str())
    {
        return Err(RemoteError::Malformed {
            key: key.to_string(),
            reason: format!(
                "it describes {}-{} (topic id {}), not the partition of its folder",
                manifest.topic, manifest.partition, manifest.topic_id
            ),
        });
    }
    Ok(Some((manifest, version)))
}

/// The partition's manifest as stored, or `None` if nothing was ever tiered.
pub async fn read_manifest(
    store: &dyn ObjectStore,
    layout: &PartitionLayout,
) -> Result<Option<Manifest>> {
    Ok(get_manifest(store, layout).await?.map(|(manifest, _)| manifest))
}

/// The only writer of a partition's manifest (the leader's `RemoteLogManager` task for it):
/// every change is a conditional PUT on the version it last wrote or read, under its writer
/// epoch.
#[derive(Debug)]
pub struct ManifestWriter {
    store: Arc<dyn ObjectStore>,
    layout: PartitionLayout,
    manifest: Manifest,
    version: UpdateVersion,
}

impl ManifestWriter {
    /// Takes the partition: stores its manifest (a new one if there is none) with the writer
    /// epoch raised by one, which fences every earlier writer.
    pub async fn acquire(store: Arc<dyn ObjectStore>, layout: PartitionLayout) -> Result<Self> {
        Self::acquire_with_configs(store, layout, None).await
    }

    /// [`acquire`](Self::acquire), recording `topic_configs` (the topic's overrides) in the
    /// manifest when given, for a broker that re-creates the topic from the bucket.
    pub async fn acquire_with_configs(
        store: Arc<dyn ObjectStore>,
        layout: PartitionLayout,
        topic_configs: Option<BTreeMap<String, String>>,
    ) -> Result<Self> {
        let key = layout.manifest_key();
        for _ in 0..ACQUIRE_ATTEMPTS_MAX {
            let (current, mode) = match get_manifest(store.as_ref(), &layout).await? {
                Some((manifest, version)) => (manifest, PutMode::Update(version)),
                None => (
                    Manifest::empty(&layout.topic, layout.partition, &layout.topic_id),
                    PutMode::Create,
                ),
            };
            let mut next = current;
            if let Some(configs) = &topic_configs {
                next.topic_configs.clone_from(configs);
            }
            next.writer_epoch += 1;
            next.manifest_version += 1;
            match put_manifest(store.as_ref(), &key, &next, mode).await {
                Ok(version) => return Ok(Self { store, layout, manifest: next, version }),
                // Another writer changed it between the read and the write: read again.
                Err(StoreError::Precondition { .. } | StoreError::AlreadyExists { .. }) => {}
                Err(source) => return Err(RemoteError::store("put", &key, source)),
            }
        }
        Err(RemoteError::Contended { key: key.to_string(), attempts: ACQUIRE_ATTEMPTS_MAX })
    }

    /// The manifest as this writer last stored it.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// This writer's epoch.
    pub fn writer_epoch(&self) -> u64 {
        self.manifest.writer_epoch
    }

    /// Stores the manifest after `change`, one version up; returns the entries it dropped,
    /// whose objects may now be deleted. A higher writer epoch in the bucket is
    /// [`RemoteError::Fenced`], and this writer must stop. A PUT whose answer was lost but
    /// which was stored counts as stored.
    pub async fn commit(&mut self, change: &Change) -> Result<Vec<SegmentEntry>> {
        let (mut next, removed) = self.manifest.apply(change)?;
        next.manifest_version += 1;
        let key = self.layout.manifest_key();
        let mode = PutMode::Update(self.version.clone());
        let outcome = put_manifest(self.store.as_ref(), &key, &next, mode).await;
        match outcome {
            Ok(version) => {
                self.manifest = next;
                self.version = version;
                Ok(removed)
            }
            Err(error) => {
                // Find out what the bucket holds: another writer's newer epoch, or this very
                // change (stored, its answer lost), or an error to report as it came.
                let stored = get_manifest(self.store.as_ref(), &self.layout).await?;
                match stored {
                    Some((stored, _)) if stored.writer_epoch > self.manifest.writer_epoch => {
                        Err(RemoteError::Fenced {
                            key: key.to_string(),
                            writer_epoch: self.manifest.writer_epoch,
                            stored_epoch: stored.writer_epoch,
                        })
                    }
                    Some((stored, version)) if stored == next => {
                        self.manifest = next;
                        self.version = version;
                        Ok(removed)
                    }
                    _ => Err(RemoteError::store("put", &key, error)),
                }
            }
        }
    }
}

/// A manifest PUT with `mode`; the new version to update from.
async fn put_manifest(
    store: &dyn ObjectStore,
    key: &Path,
    manifest: &Manifest,
    mode: PutMode,
) -> std::result::Result<UpdateVersion, StoreError> {
    let payload = PutPayload::from(manifest.to_json());
    let result = store.put_opts(key, payload, PutOptions::from(mode)).await?;
    Ok(UpdateVersion::from(result))
}

/// Uploads a segment's objects (`objects` must hold its `.log`) under a new id with create-only
/// PUTs, and returns the entry to commit with [`Change::Add`] (or in a [`Change::Replace`]).
/// Until it is committed, the objects are orphans.
pub async fn upload_segment(
    store: &dyn ObjectStore,
    layout: &PartitionLayout,
    base_offset: i64,
    last_offset: i64,
    max_timestamp_ms: i64,
    objects: &[(ObjectKind, Bytes)],
) -> Result<SegmentEntry> {
    let log = objects
        .iter()
        .find(|(kind, _)| *kind == ObjectKind::Log)
        .map(|(_, bytes)| bytes)
        .ok_or_else(|| RemoteError::invalid("a segment is uploaded with its .log"))?;
    let id = SegmentId::generate();
    // The objects go at once: one PUT's latency for the segment, not one per object.
    let puts = objects.iter().map(|(kind, bytes)| {
        let key = layout.object_key(base_offset, id, *kind);
        async move {
            let options = PutOptions::from(PutMode::Create);
            store
                .put_opts(&key, PutPayload::from(bytes.clone()), options)
                .await
                .map_err(|source| RemoteError::store("put", &key, source))
        }
    });
    futures::future::try_join_all(puts).await?;
    Ok(SegmentEntry {
        id,
        base_offset,
        last_offset,
        max_timestamp_ms,
        log_bytes: log.len() as u64,
        log_crc32c: crc32c::crc32c(log),
        objects: objects.iter().map(|(kind, _)| *kind).collect(),
    })
}

/// Deletes the objects of `entry` (one no manifest names any more); objects already gone are
/// fine.
pub async fn delete_segment_objects(
    store: &dyn ObjectStore,
    layout: &PartitionLayout,
    entry: &SegmentEntry,
) -> Result<()> {
    let keys: Vec<Path> = entry
        .objects
        .iter()
        .map(|kind| layout.object_key(entry.base_offset, entry.id, *kind))
        .collect();
    delete_objects(store, &keys).await
}

/// The objects of the partition's folder that `manifest` does not name and that are not being
/// uploaded (`in_flight`, the writer's uncommitted uploads): what a crash between an upload and
/// its commit, or between a commit and its deletions, left behind. Other names in the folder
/// are listed too (nothing but this crate writes there).
pub async fn find_orphans(
    store: &dyn ObjectStore,
    layout: &PartitionLayout,
    manifest: &Manifest,
    in_flight: &BTreeSet<SegmentId>,
) -> Result<Vec<Path>> {
    let named: BTreeSet<SegmentId> = manifest.segments.iter().map(|entry| entry.id).collect();
    Ok(segment_objects(store, layout)
        .await?
        .into_iter()
        .filter(|key| match layout.parse_object_key(key) {
            Some((_, id, _)) => !named.contains(&id) && !in_flight.contains(&id),
            None => true,
        })
        .collect())
}

/// The keys of every object in a partition's segments folder.
async fn segment_objects(store: &dyn ObjectStore, layout: &PartitionLayout) -> Result<Vec<Path>> {
    let dir = layout.segments_dir();
    let listed: Vec<_> = store
        .list(Some(&dir))
        .try_collect()
        .await
        .map_err(|source| RemoteError::store("list", &dir, source))?;
    Ok(listed.into_iter().map(|meta| meta.location).collect())
}

/// Deletes the objects at `keys`; objects already gone are fine.
pub async fn delete_objects(store: &dyn ObjectStore, keys: &[Path]) -> Result<()> {
    for key in keys {
        match store.delete(key).await {
            Ok(()) | Err(StoreError::NotFound { .. }) => {}
            Err(source) => return Err(RemoteError::store("delete", key, source)),
        }
    }
    Ok(())
}

/// Deletes a partition's manifest (a deleted topic's, first, so that no broker re-creates the
/// topic from the bucket); one already gone is fine.
pub async fn delete_manifest(store: &dyn ObjectStore, layout: &PartitionLayout) -> Result<()> {
    delete_objects(store, &[layout.manifest_key()]).await
}

/// Deletes every object of a partition's segments folder (a deleted topic's, after its
/// manifest); returns how many went.
pub async fn delete_partition_objects(
    store: &dyn ObjectStore,
    layout: &PartitionLayout,
) -> Result<usize> {
    let keys = segment_objects(store, layout).await?;
    delete_objects(store, &keys).await?;
    Ok(keys.len())
}

/// Every partition manifest under `prefix` (a broker with an empty disk learns from them which
/// topics and partitions the bucket holds). A folder whose manifest is missing (being created)
/// is skipped; one whose manifest does not describe the folder's partition is an error.
pub async fn list_manifests(store: &dyn ObjectStore, prefix: &str) -> Result<Vec<Manifest>> {
    let root = Path::from(prefix);
    let listed = store
        .list_with_delimiter(Some(&root))
        .await
        .map_err(|source| RemoteError::store("list", &root, source))?;
    let mut manifests = Vec::new();
    for folder in listed.common_prefixes {
        let key = folder.clone().join("manifest.json");
        let got = match store.get(&key).await {
            Ok(got) => got,
            Err(StoreError::NotFound { .. }) => continue,
            Err(source) => return Err(RemoteError::store("get", &key, source)),
        };
        let bytes = got.bytes().await.map_err(|source| RemoteError::store("get", &key, source))?;
        let manifest = Manifest::parse(key.as_ref(), &bytes)?;
        let layout =
            PartitionLayout::new(prefix, &manifest.topic, manifest.partition, &manifest.topic_id);
        if layout.dir() != &folder {
            return Err(RemoteError::Malformed {
                key: key.to_string(),
                reason: format!(
                    "it describes {}-{} (topic id {}), not the partition of its folder",
                    manifest.topic, manifest.partition, manifest.topic_id
                ),
            });
        }
        manifests.push(manifest);
    }
    manifests.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(manifests)
}

/// Checks that `store` honours conditional PUTs, which the manifest's fencing needs: a
/// create-only PUT of an existing key must fail, and so must an update from a stale version.
/// A store that ignores either is [`RemoteError::Unsupported`]. Uses (and removes) one object
/// under `prefix`.
pub async fn probe_conditional_put(store: &dyn ObjectStore, prefix: &str) -> Result<()> {
    let key = Path::from(format!("{prefix}/.seglog-probe-{}", SegmentId::generate()).as_str());
    let put = |mode: PutMode, bytes: &'static [u8]| {
        let key = key.clone();
        async move { store.put_opts(&key, PutPayload::from_static(bytes), PutOptions::from(mode)).await }
    };
    let first = put(PutMode::Create, b"1")
        .await
        .map_err(|source| RemoteError::store("put", &key, source))?;
    let outcome = async {
        match put(PutMode::Create, b"2").await {
            Err(StoreError::AlreadyExists { .. }) => {}
            Ok(_) => {
                return Err(RemoteError::Unsupported {
                    reason: "a create-only PUT (If-None-Match: *) overwrote an existing object"
                        .into(),
                });
            }
            Err(StoreError::NotImplemented { .. }) => {
                return Err(RemoteError::Unsupported {
                    reason: "create-only PUTs (If-None-Match) are not implemented".into(),
                });
            }
            Err(source) => return Err(RemoteError::store("put", &key, source)),
        }
        let current = UpdateVersion::from(first);
        put(PutMode::Update(current.clone()), b"3").await.map_err(|source| match source {
            StoreError::NotImplemented { .. } => RemoteError::Unsupported {
                reason: "conditional updates (If-Match) are not implemented".into(),
            },
            source => RemoteError::store("put", &key, source),
        })?;
        match put(PutMode::Update(current), b"4").await {
            Err(StoreError::Precondition { .. }) => Ok(()),
            Ok(_) => Err(RemoteError::Unsupported {
                reason: "an update from a stale version (If-Match) was stored".into(),
            }),
            Err(source) => Err(RemoteError::store("put", &key, source)),
        }
    }
    .await;
    let removed = store.delete(&key).await;
    outcome?;
    removed.map_err(|source| RemoteError::store("delete", &key, source))
}

#[cfg(test)]
mod tests {
    use object_store::memory::InMemory;

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().build().unwrap()
    }

    fn layout() -> PartitionLayout {
        PartitionLayout::new("tiered", "orders", 0, "AAAAAAAAAAAAAAAAAAAAAQ")
    }

    async fn upload(store: &dyn ObjectStore, base: i64, last: i64) -> SegmentEntry {
        let objects = [
            (ObjectKind::Log, Bytes::from(format!("records {base}..={last}"))),
            (ObjectKind::Index, Bytes::from_static(b"index")),
        ];
        upload_segment(store, &layout(), base, last, 1_000, &objects).await.unwrap()
    }

    #[test]
    fn the_in_memory_store_passes_the_probe_and_a_store_without_updates_is_refused() {
        runtime().block_on(async {
            probe_conditional_put(&InMemory::new(), "tiered").await.unwrap();
            let dir = std::env::temp_dir().join(format!("seglog-probe-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let local = object_store::local::LocalFileSystem::new_with_prefix(&dir).unwrap();
            let refused = probe_conditional_put(&local, "tiered").await.unwrap_err();
            assert!(
                refused.to_string().starts_with("the object store cannot be used for tiering: "),
                "{refused}"
            );
            std::fs::remove_dir_all(&dir).unwrap();
        });
    }

    #[test]
    fn a_second_writer_fences_the_first_which_changes_nothing_more() {
        runtime().block_on(async {
            let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let mut first = ManifestWriter::acquire(Arc::clone(&store), layout()).await.unwrap();
            let entry = upload(store.as_ref(), 0, 9).await;
            first.commit(&Change::Add(entry)).await.unwrap();
            let mut second = ManifestWriter::acquire(Arc::clone(&store), layout()).await.unwrap();
            assert_eq!((first.writer_epoch(), second.writer_epoch()), (1, 2));
            let late = upload(store.as_ref(), 10, 19).await;
            let fenced = first.commit(&Change::Add(late.clone())).await.unwrap_err();
            let RemoteError::Fenced { writer_epoch, stored_epoch, .. } = fenced else {
                panic!("not fenced: {fenced}");
            };
            assert_eq!((writer_epoch, stored_epoch), (1, 2));
            // The bucket has the second writer's view, and it goes on.
            second.commit(&Change::Add(late)).await.unwrap();
            let stored = read_manifest(store.as_ref(), &layout()).await.unwrap().unwrap();
            assert_eq!(
                (stored.end_offset(), stored.manifest_version, stored.writer_epoch),
                (20, 4, 2)
            );
        });
    }

    #[test]
    fn orphans_are_the_objects_no_entry_names_and_none_in_flight() {
        runtime().block_on(async {
            let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let mut writer = ManifestWriter::acquire(Arc::clone(&store), layout()).await.unwrap();
            let kept = upload(store.as_ref(), 0, 9).await;
            writer.commit(&Change::Add(kept.clone())).await.unwrap();
            let uncommitted = upload(store.as_ref(), 10, 19).await;
            let in_flight = upload(store.as_ref(), 10, 19).await;
            let orphans = find_orphans(
                store.as_ref(),
                &layout(),
                writer.manifest(),
                &BTreeSet::from([in_flight.id]),
            )
            .await
            .unwrap();
            let mut want: Vec<Path> = [ObjectKind::Log, ObjectKind::Index]
                .into_iter()
                .map(|kind| layout().object_key(10, uncommitted.id, kind))
                .collect();
            let mut orphans = orphans;
            orphans.sort();
            want.sort();
            assert_eq!(orphans, want);
        });
    }
}
