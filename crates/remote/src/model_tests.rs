//! The manifest model test: seeded sequences of uploads, commits, expiries, compaction's
//! replacements, crashes between any two steps, restarts and orphan collection over an
//! in-memory bucket, checked after every step against a model of the remote log.
//!
//! Invariants, read from the bucket each time:
//! - the manifest parses and keeps its rules (contiguous segments, the log start inside the
//!   first);
//! - it covers exactly the model's [log start, end): every offset readable once;
//! - every entry's objects exist;
//! - `manifest_version` strictly increases from one read to the next change;
//! - after a collection, no orphan is left.
//!
//! `SEGLOG_REMOTE_SEQUENCES` sets how many sequences run (default 10,000), `SEED` runs one; a
//! failure prints its seed.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::{ObjectStore, ObjectStoreExt};

use seglog_storage::testing::Rng;

use crate::error::RemoteError;
use crate::faults::{FaultCounts, FaultStore};
use crate::layout::{ObjectKind, PartitionLayout};
use crate::manifest::{Change, SegmentEntry};
use crate::writer::{
    ManifestWriter, delete_segment_objects, find_orphans, read_manifest, upload_segment,
};

/// What the remote log should be: the offsets committed, as far as the model knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Model {
    log_start: i64,
    end: i64,
}

fn layout() -> PartitionLayout {
    PartitionLayout::new("bucket-prefix", "model", 0, "AAAAAAAAAAAAAAAAAAAAAQ")
}

async fn upload(
    store: &dyn ObjectStore,
    base: i64,
    last: i64,
) -> Result<SegmentEntry, RemoteError> {
    let objects = [
        (ObjectKind::Log, Bytes::from(format!("{base}..={last}"))),
        (ObjectKind::Index, Bytes::from_static(b"i")),
        (ObjectKind::TimeIndex, Bytes::from_static(b"t")),
    ];
    upload_segment(store, &layout(), base, last, base * 10, &objects).await
}

/// The invariants, against the bucket; returns the stored version.
async fn check(store: &dyn ObjectStore, model: Model, last_version: u64, seed: u64) -> u64 {
    let Some(manifest) = read_manifest(store, &layout()).await.expect("the manifest reads") else {
        assert_eq!(model, Model { log_start: 0, end: 0 }, "seed {seed}: no manifest");
        return 0;
    };
    assert!(
        manifest.manifest_version >= last_version,
        "seed {seed}: version went back from {last_version} to {}",
        manifest.manifest_version
    );
    assert_eq!(
        (manifest.log_start_offset.min(manifest.end_offset()), manifest.end_offset()),
        (model.log_start.min(model.end), model.end),
        "seed {seed}: the manifest covers other offsets than the model: {manifest:?}"
    );
    if !manifest.segments.is_empty() {
        assert_eq!(manifest.log_start_offset, model.log_start, "seed {seed}");
    }
    for entry in &manifest.segments {
        for kind in &entry.objects {
            let key = layout().object_key(entry.base_offset, entry.id, *kind);
            assert!(store.head(&key).await.is_ok(), "seed {seed}: {key} is missing");
        }
    }
    manifest.manifest_version
}

/// What a sequence did, so that the test can show it exercised every path.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    commits: u64,
    replacements: u64,
    crashes: u64,
    orphans_collected: u64,
    /// Steps cut short by an injected store error (the writer is then dropped, as a broker
    /// would back off and take the partition again).
    faulted_steps: u64,
    /// Commits whose outcome the writer could not learn: the model took whichever the bucket
    /// showed, and it had to be one of the two.
    ambiguous_commits: u64,
}

/// One sequence's state: the bucket (through a fault-injecting store), the choices, the model
/// and the live writer (none after a crash or a fault, until the next step restarts one).
struct Sequence {
    seed: u64,
    /// What the writers use: faults injected.
    store: Arc<FaultStore>,
    /// The same bucket without faults, for the checks.
    bucket: Arc<dyn ObjectStore>,
    rng: Rng,
    model: Model,
    /// The model after a commit whose outcome is unknown (an error after it may have been
    /// stored): the bucket must show it or `model`.
    maybe: Option<Model>,
    writer: Option<ManifestWriter>,
    version: u64,
}

type Step = Result<(), RemoteError>;

impl Sequence {
    fn store(&self) -> &dyn ObjectStore {
        self.store.as_ref()
    }

    /// A (re)start: the new writer reads the bucket and fences the last.
    async fn restart(&mut self) -> Step {
        let store: Arc<dyn ObjectStore> = Arc::clone(&self.store) as Arc<dyn ObjectStore>;
        let acquired = ManifestWriter::acquire(store, layout()).await?;
        assert!(acquired.manifest().manifest_version > self.version, "seed {}", self.seed);
        self.version = acquired.manifest().manifest_version;
        self.writer = Some(acquired);
        Ok(())
    }

    fn writer(&mut self) -> &mut ManifestWriter {
        self.writer.as_mut().expect("a live writer")
    }

    /// Commits `change`, the model becoming `after`; an error leaves the outcome unknown.
    async fn commit(
        &mut self,
        change: &Change,
        after: Model,
    ) -> Result<Vec<SegmentEntry>, RemoteError> {
        match self.writer().commit(change).await {
            Ok(removed) => {
                self.model = after;
                Ok(removed)
            }
            Err(error) => {
                self.maybe = Some(after);
                Err(error)
            }
        }
    }

    /// Deletes the objects of entries a commit dropped, unless the process "crashes" first.
    async fn delete_or_crash(
        &mut self,
        removed: &[SegmentEntry],
        crash: bool,
        counts: &mut Counts,
    ) -> Step {
        if crash {
            self.writer = None;
            counts.crashes += 1;
            return Ok(());
        }
        for entry in removed {
            delete_segment_objects(self.store(), &layout(), entry).await?;
        }
        Ok(())
    }

    /// Uploads the next closed segment; a crash before its commit leaves orphans.
    async fn upload(&mut self, crash: bool, counts: &mut Counts) -> Step {
        let length = 1 + self.rng.below(20) as i64;
        let end = self.model.end;
        let entry = upload(self.store(), end, end + length - 1).await?;
        if crash {
            self.writer = None;
            counts.crashes += 1;
            return Ok(());
        }
        let after = Model { end: end + length, ..self.model };
        self.commit(&Change::Add(entry), after).await?;
        counts.commits += 1;
        Ok(())
    }

    /// Retention or DeleteRecords: the manifest first, then the objects.
    async fn expire(&mut self, crash: bool, counts: &mut Counts) -> Step {
        let Model { log_start, end } = self.model;
        if end == log_start {
            return Ok(());
        }
        let start = log_start + 1 + self.rng.below((end - log_start) as u64) as i64;
        let change = Change::Expire { log_start_offset: start };
        let removed = self.commit(&change, Model { log_start: start, end }).await?;
        counts.commits += 1;
        self.delete_or_crash(&removed, crash, counts).await
    }

    /// Compaction: a run of 1 to 3 segments re-uploaded as 1 or 2, swapped in one change, the
    /// old objects deleted after it; a crash may come before the swap or after it.
    async fn replace(&mut self, crash: bool, counts: &mut Counts) -> Step {
        let segments = self.writer().manifest().segments.clone();
        if segments.is_empty() {
            return Ok(());
        }
        let first = self.rng.below(segments.len() as u64) as usize;
        let count = (1 + self.rng.below(3) as usize).min(segments.len() - first);
        let run = &segments[first..first + count];
        let (base, last) = (run[0].base_offset, run[count - 1].last_offset);
        // Each new segment ends at or after the log start (the first may begin below it, as
        // the one it replaces did).
        let low = base.max(self.model.log_start);
        let mut with = Vec::new();
        if last > low && self.rng.coin() {
            let middle = low + self.rng.below((last - low) as u64) as i64;
            with.push(upload(self.store(), base, middle).await?);
            with.push(upload(self.store(), middle + 1, last).await?);
        } else {
            with.push(upload(self.store(), base, last).await?);
        }
        if crash && self.rng.coin() {
            self.writer = None;
            counts.crashes += 1;
            return Ok(());
        }
        let replaced = run.iter().map(|entry| entry.id).collect();
        let removed = self.commit(&Change::Replace { replaced, with }, self.model).await?;
        counts.commits += 1;
        counts.replacements += 1;
        self.delete_or_crash(&removed, crash, counts).await
    }

    /// Collects the orphans (nothing is in flight between steps), then checks by listing the
    /// bucket (not with find_orphans, which is under test) that only named objects are left.
    async fn collect(&mut self, counts: &mut Counts) -> Step {
        let manifest = self.writer().manifest().clone();
        let orphans = find_orphans(self.store(), &layout(), &manifest, &BTreeSet::new()).await?;
        for key in orphans {
            self.store().delete(&key).await.map_err(|e| RemoteError::store("delete", &key, e))?;
            counts.orphans_collected += 1;
        }
        let named: BTreeSet<String> = manifest
            .segments
            .iter()
            .flat_map(|entry| {
                entry
                    .objects
                    .iter()
                    .map(|kind| layout().object_key(entry.base_offset, entry.id, *kind).to_string())
            })
            .collect();
        let left: Vec<String> = self
            .bucket
            .list(Some(&layout().segments_dir()))
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .expect("list");
        let seed = self.seed;
        let unnamed: Vec<&String> = left.iter().filter(|key| !named.contains(*key)).collect();
        assert!(unnamed.is_empty(), "seed {seed}: orphans left after a collection: {unnamed:?}");
        assert_eq!(left.len(), named.len(), "seed {seed}: a named object is missing");
        Ok(())
    }

    /// After a commit of unknown outcome, the bucket decides which model holds (it must be one
    /// of the two).
    async fn settle(&mut self, counts: &mut Counts) {
        let Some(after) = self.maybe.take() else { return };
        counts.ambiguous_commits += 1;
        let stored = read_manifest(self.bucket.as_ref(), &layout()).await.expect("read");
        let stored = stored.expect("a manifest");
        let covers = |model: Model| {
            (stored.log_start_offset.min(stored.end_offset()), stored.end_offset())
                == (model.log_start.min(model.end), model.end)
        };
        if covers(after) && !covers(self.model) {
            self.model = after;
        }
    }
}

async fn run(seed: u64, fault_percent: u64, counts: &mut Counts) {
    let bucket: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let store = Arc::new(FaultStore::new(Arc::clone(&bucket), seed ^ 0xFA17, fault_percent));
    let mut sequence = Sequence {
        seed,
        store,
        bucket,
        rng: Rng(seed),
        model: Model { log_start: 0, end: 0 },
        maybe: None,
        writer: None,
        version: 0,
    };
    for _ in 0..30 {
        let step = if sequence.writer.is_none() {
            sequence.restart().await
        } else {
            let crash = sequence.rng.below(100) < 15;
            match sequence.rng.below(4) {
                0 => sequence.upload(crash, counts).await,
                1 => sequence.expire(crash, counts).await,
                2 => sequence.replace(crash, counts).await,
                _ => sequence.collect(counts).await,
            }
        };
        if let Err(error) = step {
            let is_injected = error.to_string().contains("(injected)");
            assert!(is_injected, "seed {seed}: {error}");
            sequence.writer = None;
            counts.faulted_steps += 1;
        }
        sequence.settle(counts).await;
        let stored = check(sequence.bucket.as_ref(), sequence.model, sequence.version, seed).await;
        sequence.version = sequence.version.max(stored);
    }
    let injected = sequence.store.counts();
    assert!(fault_percent > 0 || injected == FaultCounts::default(), "seed {seed}");
}

fn run_seeds(fault_percent: u64, default_sequences: u64) -> Counts {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let seeds: Vec<u64> = if let Ok(seed) = std::env::var("SEED") {
        vec![seed.parse().expect("SEED is a number")]
    } else {
        let n = std::env::var("SEGLOG_REMOTE_SEQUENCES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(default_sequences);
        (0..n).collect()
    };
    let mut counts = Counts::default();
    for seed in seeds {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime.block_on(run(seed, fault_percent, &mut counts));
        }));
        assert!(ran.is_ok(), "the sequence of seed {seed} failed (run it alone with SEED={seed})");
    }
    counts
}

#[test]
fn seeded_sequences_keep_the_remote_log_whole_and_its_bucket_clean() {
    let counts = run_seeds(0, 10_000);
    // Every path ran, many times over.
    assert!(
        counts.commits > 50_000
            && counts.replacements > 10_000
            && counts.crashes > 10_000
            && counts.orphans_collected > 10_000,
        "{counts:?}"
    );
}

#[test]
fn store_errors_and_lost_answers_lose_or_double_no_entry() {
    // 8% of the requests fail with 503 SlowDown, a third of the failed PUTs after storing.
    let counts = run_seeds(8, 2_000);
    assert!(
        counts.faulted_steps > 2_000 && counts.ambiguous_commits > 200 && counts.commits > 5_000,
        "{counts:?}"
    );
}
