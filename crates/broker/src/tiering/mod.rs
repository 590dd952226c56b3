//! Tiered storage in the broker (Kafka's `RemoteLogManager`, docs/tiered-storage.md): a task
//! that uploads each tiered partition's closed segments to the bucket and applies remote
//! retention, and the reads of offsets below a partition's local segments.
//!
//! - A partition is tiered when its topic has `remote.storage.enable=true` and the broker has
//!   `remote.log.storage.system.enable=true`.
//! - Each round takes the partition's manifest ([`ManifestWriter::acquire`]) the first time,
//!   then expires what remote retention drops (manifest first, objects after, then the log
//!   start), then uploads the closed segments below the last stable offset, one commit each,
//!   and tells the log how far the bucket reaches, so that local retention may delete them.
//! - A failed round waits (`remote.log.manager.task.retry.backoff.ms`, doubling up to
//!   `...backoff.max.ms`) and is tried again; it never stops local serving. A fenced writer
//!   stops tiering that partition and says so.

mod compacted;
mod round;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use seglog_remote::object_store::ObjectStore;
use seglog_remote::{
    Manifest, ManifestWriter, PartitionLayout, RemoteChunkCache, RemoteError, RemoteIndexCache,
    RemoteReader, S3Config, delete_manifest, delete_partition_objects, list_manifests, open_s3,
    probe_conditional_put, read_manifest,
};
use seglog_storage::log::partition_log::TopicPartition;
use tokio::sync::watch;

use crate::Broker;
use crate::config::RemoteStorageConfig;

/// A failure of a tiering step.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TierError {
    /// The bucket, the manifest or a local segment file.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// The partition's log.
    #[error(transparent)]
    Storage(#[from] seglog_storage::Error),
    /// A blocking step did not finish.
    #[error("a tiering step stopped: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The topic has no topic id to name its folder by.
    #[error("topic {0} has no topic id")]
    NoTopicId(String),
}

impl TierError {
    /// One word for metrics' labels.
    fn kind(&self) -> &'static str {
        match self {
            Self::Remote(error) => error.kind(),
            Self::Storage(_) => "log",
            Self::Task(_) => "task",
            Self::NoTopicId(_) => "no_topic_id",
        }
    }
}

/// The uploads' rate limit (`remote.log.manager.copy.max.bytes.per.second`): each upload
/// reserves its bytes' share of time after the uploads before it, and waits for its turn.
#[derive(Debug)]
struct Throttle {
    bytes_per_second: u64,
    next_free: Mutex<Option<Instant>>,
}

impl Throttle {
    async fn acquire(&self, bytes: u64) {
        let start = {
            let mut next_free = self.next_free.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let start = next_free.map_or(now, |free| free.max(now));
            let share = Duration::from_micros(
                bytes.saturating_mul(1_000_000) / self.bytes_per_second.max(1),
            );
            *next_free = Some(start + share);
            start
        };
        tokio::time::sleep_until(start.into()).await;
    }
}

/// What the broker knows of one tiered partition.
#[derive(Debug)]
struct PartitionTier {
    layout: PartitionLayout,
    reader: RemoteReader,
    /// The manifest as last committed or read: what remote reads go by.
    manifest: RwLock<Option<Arc<Manifest>>>,
    /// The writer's state, one round at a time.
    task: tokio::sync::Mutex<TierTask>,
    /// Whether another broker took the partition over (`TierTask::fenced`, readable without
    /// waiting for a round).
    fenced: std::sync::atomic::AtomicBool,
}

impl PartitionTier {
    fn manifest(&self) -> Option<Arc<Manifest>> {
        self.manifest.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn publish(&self, manifest: &Manifest) {
        *self.manifest.write().unwrap_or_else(PoisonError::into_inner) =
            Some(Arc::new(manifest.clone()));
    }
}

/// One partition's writer: its manifest writer once acquired, whether it was fenced, and the
/// backoff after failures.
#[derive(Debug, Default)]
struct TierTask {
    writer: Option<ManifestWriter>,
    fenced: bool,
    failures: u32,
    retry_at: Option<Instant>,
    /// A failed upload or commit may have left objects no manifest names: list at the next
    /// round that gets that far.
    gc_pending: bool,
    /// Entries a compaction's re-upload replaced, with when: their objects go once
    /// `file.delete.delay.ms` has passed, so that reads under the manifest before stay whole.
    replaced: Vec<(Instant, seglog_remote::SegmentEntry)>,
}

/// The broker's tiered storage: the bucket, every tiered partition's state, the shared index
/// cache and the upload throttle.
#[derive(Debug)]
pub(crate) struct Tiering {
    store: Arc<dyn ObjectStore>,
    config: RemoteStorageConfig,
    index_cache: Arc<RemoteIndexCache>,
    /// `.log` chunks, shared by every partition's reader (none when its bound is 0).
    chunk_cache: Option<Arc<RemoteChunkCache>>,
    partitions: Mutex<HashMap<TopicPartition, Arc<PartitionTier>>>,
    throttle: Throttle,
}

/// Why tiering could not start.
#[derive(Debug, thiserror::Error)]
pub enum TieringStartError {
    /// The bucket could not be opened, or failed the conditional-PUT probe.
    #[error("remote storage (bucket {bucket}, prefix {prefix}): {source}")]
    Store { bucket: String, prefix: String, source: RemoteError },
}

impl Tiering {
    /// Opens the configured bucket, or uses `store`, and checks that it honours conditional
    /// PUTs (a store that does not is refused: the manifest's fencing depends on them).
    pub(crate) async fn open(
        config: &RemoteStorageConfig,
        store: Option<Arc<dyn ObjectStore>>,
    ) -> Result<Self, TieringStartError> {
        let failed = |source| TieringStartError::Store {
            bucket: config.bucket.clone(),
            prefix: config.prefix.clone(),
            source,
        };
        let store = match store {
            Some(store) => store,
            None => open_s3(&S3Config {
                bucket: config.bucket.clone(),
                endpoint: config.endpoint.clone(),
                region: config.region.clone(),
                access_key_id: None,
                secret_access_key: None,
                allow_http: config.allow_http,
            })
            .map_err(failed)?,
        };
        probe_conditional_put(store.as_ref(), &config.prefix).await.map_err(failed)?;
        let index_cache_bytes_max =
            usize::try_from(config.index_cache_bytes_max).unwrap_or(usize::MAX);
        Ok(Self {
            store,
            config: config.clone(),
            index_cache: Arc::new(RemoteIndexCache::new(index_cache_bytes_max)),
            chunk_cache: (config.fetch_chunk_cache_bytes > 0).then(|| {
                let bytes_max =
                    usize::try_from(config.fetch_chunk_cache_bytes).unwrap_or(usize::MAX);
                Arc::new(RemoteChunkCache::new(config.fetch_chunk_bytes, bytes_max))
            }),
            partitions: Mutex::new(HashMap::new()),
            throttle: Throttle {
                bytes_per_second: config.copy_max_bytes_per_second.max(1),
                next_free: Mutex::new(None),
            },
        })
    }

    /// The state of `tp`, made at its first use.
    /// The segments of `tp`'s manifest as this broker last committed or read it, without
    /// asking the bucket (the console's timeline): `None` before any round or read knew it.
    pub(crate) fn known_remote_segments(
        &self,
        tp: &TopicPartition,
    ) -> Option<Vec<seglog_remote::SegmentEntry>> {
        let partitions = self.partitions.lock().unwrap_or_else(PoisonError::into_inner);
        let manifest = partitions.get(tp)?.manifest()?;
        Some(manifest.segments.clone())
    }

    fn partition(
        &self,
        broker: &Broker,
        tp: &TopicPartition,
    ) -> Result<Arc<PartitionTier>, TierError> {
        let mut partitions = self.partitions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tier) = partitions.get(tp) {
            return Ok(Arc::clone(tier));
        }
        let topic_id = broker
            .manager
            .topic_id(&tp.topic)
            .ok_or_else(|| TierError::NoTopicId(tp.topic.clone()))?;
        let topic_id = seglog_format::java::uuid_to_base64(&topic_id);
        let layout = PartitionLayout::new(&self.config.prefix, &tp.topic, tp.partition, &topic_id);
        let mut reader = RemoteReader::sharing(layout.clone(), Arc::clone(&self.index_cache));
        if let Some(chunks) = &self.chunk_cache {
            reader = reader.with_chunk_cache(Arc::clone(chunks));
        }
        let tier = Arc::new(PartitionTier {
            reader,
            layout,
            manifest: RwLock::new(None),
            task: tokio::sync::Mutex::new(TierTask::default()),
            fenced: std::sync::atomic::AtomicBool::new(false),
        });
        partitions.insert(tp.clone(), Arc::clone(&tier));
        Ok(tier)
    }

    /// Re-creates, from the bucket's manifests, the tiered topics this broker's disk does not
    /// have (a broker started on an empty disk with the same bucket): each with its topic id,
    /// partitions and configuration, each partition's log starting at its remote end, so that
    /// every remote offset is served and the log start is the bucket's. Partitions of topics
    /// the disk has learn how far the bucket reaches. Returns the topics re-created.
    pub(crate) async fn restore(&self, broker: &Broker) -> Result<usize, TierError> {
        let manifests = list_manifests(self.store.as_ref(), &self.config.prefix).await?;
        let mut topics: BTreeMap<(String, String), Vec<Manifest>> = BTreeMap::new();
        for manifest in manifests {
            let key = (manifest.topic.clone(), manifest.topic_id.clone());
            topics.entry(key).or_default().push(manifest);
        }
        let mut restored = 0;
        for ((topic, topic_id), manifests) in topics {
            let Ok(id) = seglog_format::java::uuid_from_base64(&topic_id) else { continue };
            match broker.manager.topic_id(&topic) {
                Some(existing) if existing != id => {
                    tracing::warn!(
                        topic,
                        bucket_topic_id = topic_id,
                        "the bucket holds another incarnation of this topic; it is not restored"
                    );
                    continue;
                }
                Some(_) => {}
                None => {
                    let n_partitions =
                        manifests.iter().map(|m| m.partition).max().unwrap_or(0).saturating_add(1);
                    let mut overrides = manifests[0].topic_configs.clone();
                    overrides.insert("remote.storage.enable".to_owned(), "true".to_owned());
                    let (manager, name) = (Arc::clone(&broker.manager), topic.clone());
                    tokio::task::spawn_blocking(move || {
                        manager.create_topic_with_id(&name, n_partitions, overrides, Some(id))
                    })
                    .await??;
                    tracing::info!(
                        topic,
                        topic_id,
                        n_partitions,
                        "re-created a tiered topic from the bucket"
                    );
                    restored += 1;
                }
            }
            for manifest in &manifests {
                let tp = TopicPartition { topic: topic.clone(), partition: manifest.partition };
                let log = broker.manager.get_log(&tp)?;
                let now_ms = broker.manager.clock().now_ms();
                if let Err(error) = round::sync_log_with_manifest(&log, manifest, now_ms).await {
                    tracing::warn!(partition = %tp, %error, "cannot start the log at its remote end");
                }
            }
        }
        Ok(restored)
    }

    /// The partitions another broker's writer fenced this one out of, by name.
    pub(crate) fn fenced_partitions(&self) -> Vec<TopicPartition> {
        let partitions = self.partitions.lock().unwrap_or_else(PoisonError::into_inner);
        let mut fenced: Vec<TopicPartition> = partitions
            .iter()
            .filter(|(_, tier)| tier.fenced.load(std::sync::atomic::Ordering::Relaxed))
            .map(|(tp, _)| tp.clone())
            .collect();
        fenced.sort();
        fenced
    }

    /// A deleted topic's remote data goes with it (Kafka's `RemoteLogManager` deletes a deleted
    /// partition's remote segments): this broker forgets its partitions, each partition's
    /// manifest is deleted at once (so that no broker re-creates the topic from the bucket),
    /// and the objects in the background.
    pub(crate) async fn delete_topic(
        self: &Arc<Self>,
        topic: &str,
        topic_id: &[u8; 16],
        n_partitions: i32,
    ) {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|tp, _| tp.topic != topic);
        let topic_id = seglog_format::java::uuid_to_base64(topic_id);
        let layouts: Vec<PartitionLayout> = (0..n_partitions)
            .map(|partition| PartitionLayout::new(&self.config.prefix, topic, partition, &topic_id))
            .collect();
        for layout in &layouts {
            if let Err(error) = delete_manifest(self.store.as_ref(), layout).await {
                tracing::warn!(topic, %error, "cannot delete a deleted topic's manifest");
            }
        }
        let tiering = Arc::clone(self);
        tokio::spawn(async move {
            for layout in &layouts {
                match delete_partition_objects(tiering.store.as_ref(), layout).await {
                    Ok(objects) => tracing::info!(
                        dir = %layout.dir(),
                        objects,
                        "deleted a deleted topic's remote objects"
                    ),
                    Err(error) => tracing::warn!(
                        dir = %layout.dir(),
                        %error,
                        "cannot delete a deleted topic's remote objects; they stay as orphans"
                    ),
                }
            }
        });
    }

    /// Records of `tp` from the bucket from the batch holding `offset` (whole batches, at least
    /// one, then up to `max_bytes`), or `None` when the remote log does not hold it. Waits at
    /// most `remote.fetch.max.wait.ms`; `Ok(Some(empty))` when that passed first, as Kafka's
    /// `DelayedRemoteFetch` answers.
    pub(crate) async fn read(
        &self,
        broker: &Broker,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
    ) -> Result<Option<Bytes>, TierError> {
        let tier = self.partition(broker, tp)?;
        let started = Instant::now();
        let wait = Duration::from_millis(self.config.fetch_max_wait_ms);
        let read = tokio::time::timeout(wait, self.read_from(&tier, offset, max_bytes)).await;
        ::metrics::histogram!("seglog_remote_fetch_seconds")
            .record(started.elapsed().as_secs_f64());
        match read {
            Err(_elapsed) => {
                ::metrics::counter!("seglog_remote_fetch_timeouts_total").increment(1);
                Ok(Some(Bytes::new()))
            }
            Ok(Err(error)) => {
                ::metrics::counter!("seglog_remote_errors_total", "kind" => error.kind(), "op" => "fetch")
                    .increment(1);
                Err(error)
            }
            Ok(Ok(records)) => {
                let n_bytes = records.as_ref().map_or(0, Bytes::len);
                ::metrics::counter!("seglog_remote_fetch_bytes_total").increment(n_bytes as u64);
                Ok(records)
            }
        }
    }

    /// The aborted transactions (producer id, first offset) a read_committed read of `tp` from
    /// `start_offset` to `upper_bound_offset` skips: from the remote segments' `.txnindex`
    /// objects, then, if the search did not end there, from the local segments.
    pub(crate) async fn aborted_transactions(
        &self,
        broker: &Broker,
        tp: &TopicPartition,
        start_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<Vec<(i64, i64)>, TierError> {
        let tier = self.partition(broker, tp)?;
        let Some(manifest) = tier.manifest() else { return Ok(Vec::new()) };
        let (remote, complete) = tier
            .reader
            .aborted_transactions(self.store.as_ref(), &manifest, start_offset, upper_bound_offset)
            .await?;
        let mut aborted: Vec<(i64, i64)> =
            remote.iter().map(|txn| (txn.producer_id, txn.first_offset)).collect();
        if !complete {
            let log = broker.manager.get_log(tp)?;
            let local = tokio::task::spawn_blocking(move || {
                log.aborted_transactions_from(start_offset, upper_bound_offset)
            })
            .await??;
            aborted.extend(local.iter().map(|txn| (txn.producer_id, txn.first_offset)));
        }
        Ok(aborted)
    }

    /// The first record at or after `timestamp` in `tp`'s remote part from `starting_offset`
    /// (ListOffsets by timestamp, for the offsets below the local segments).
    pub(crate) async fn offset_for_timestamp(
        &self,
        broker: &Broker,
        tp: &TopicPartition,
        timestamp: i64,
        starting_offset: i64,
    ) -> Result<Option<seglog_remote::RemoteTimestampOffset>, TierError> {
        let tier = self.partition(broker, tp)?;
        let manifest = match tier.manifest() {
            Some(manifest) => manifest,
            None => match read_manifest(self.store.as_ref(), &tier.layout).await? {
                Some(manifest) => {
                    tier.publish(&manifest);
                    Arc::new(manifest)
                }
                None => return Ok(None),
            },
        };
        let found = tier
            .reader
            .find_offset_by_timestamp(self.store.as_ref(), &manifest, timestamp, starting_offset)
            .await?;
        Ok(found)
    }

    async fn read_from(
        &self,
        tier: &PartitionTier,
        offset: i64,
        max_bytes: usize,
    ) -> Result<Option<Bytes>, TierError> {
        // The manifest known here, then (if it does not hold the offset, or names objects
        // already expired) the bucket's.
        for refresh in [false, true] {
            let manifest = match tier.manifest() {
                Some(manifest) if !refresh => manifest,
                _ => match read_manifest(self.store.as_ref(), &tier.layout).await? {
                    Some(manifest) => {
                        tier.publish(&manifest);
                        Arc::new(manifest)
                    }
                    None => return Ok(None),
                },
            };
            match tier.reader.read(self.store.as_ref(), &manifest, offset, max_bytes).await {
                Ok(Some(read)) => return Ok(Some(read.records)),
                Ok(None) | Err(RemoteError::Store { .. }) if !refresh => {}
                Ok(None) => return Ok(None),
                Err(error) => return Err(error.into()),
            }
        }
        Ok(None)
    }
}

/// The tiering task: every `remote.log.manager.task.interval.ms`, one round for each tiered
/// partition, until shutdown.
pub(crate) async fn run(broker: Arc<Broker>, mut stopped: watch::Receiver<bool>) {
    let Some(tiering) = broker.tiering.as_ref().map(Arc::clone) else { return };
    let mut ticks = tokio::time::interval(Duration::from_millis(tiering.config.task_interval_ms));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stopped.changed() => return,
        }
        let mut lag_bytes = 0u64;
        for tp in tiered_partitions(&broker) {
            if *stopped.borrow() {
                return;
            }
            lag_bytes += round::tier_partition(&broker, &tiering, &tp).await;
        }
        #[expect(clippy::cast_precision_loss, reason = "Prometheus gauges are f64")]
        ::metrics::gauge!("seglog_remote_copy_lag_bytes").set(lag_bytes as f64);
    }
}

/// The partitions of every topic with `remote.storage.enable=true`, by topic.
fn tiered_partitions(broker: &Broker) -> Vec<TopicPartition> {
    let mut tiered = Vec::new();
    for (topic, n_partitions) in broker.manager.topic_partition_counts() {
        let enabled = broker.manager.topic_config(&topic).is_ok_and(|c| c.remote_storage_enable);
        if enabled {
            tiered.extend(
                (0..n_partitions)
                    .map(|partition| TopicPartition { topic: topic.clone(), partition }),
            );
        }
    }
    tiered
}
