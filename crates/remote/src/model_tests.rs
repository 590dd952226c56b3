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

use crate::layout::{ObjectKind, PartitionLayout};
use crate::manifest::{Change, SegmentEntry};
use crate::writer::{
    ManifestWriter, delete_segment_objects, find_orphans, read_manifest, upload_segment,
};

/// SplitMix64: the test's only source of choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// What the remote log should be: the offsets committed, as far as the model knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Model {
    log_start: i64,
    end: i64,
}

fn layout() -> PartitionLayout {
    PartitionLayout::new("bucket-prefix", "model", 0, "AAAAAAAAAAAAAAAAAAAAAQ")
}

async fn upload(store: &dyn ObjectStore, base: i64, last: i64) -> SegmentEntry {
    let objects = [
        (ObjectKind::Log, Bytes::from(format!("{base}..={last}"))),
        (ObjectKind::Index, Bytes::from_static(b"i")),
        (ObjectKind::TimeIndex, Bytes::from_static(b"t")),
    ];
    upload_segment(store, &layout(), base, last, base * 10, &objects).await.expect("upload")
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
}

/// One sequence's state: the bucket, the choices, the model and the live writer (none after a
/// crash, until the next step restarts one).
struct Sequence {
    seed: u64,
    store: Arc<dyn ObjectStore>,
    rng: Rng,
    model: Model,
    writer: Option<ManifestWriter>,
    version: u64,
}

impl Sequence {
    /// A (re)start: the new writer reads the bucket and fences the last.
    async fn restart(&mut self) {
        let acquired = ManifestWriter::acquire(Arc::clone(&self.store), layout()).await;
        let acquired = acquired.expect("acquire");
        assert!(acquired.manifest().manifest_version > self.version, "seed {}", self.seed);
        self.version = acquired.manifest().manifest_version;
        self.writer = Some(acquired);
    }

    fn writer(&mut self) -> &mut ManifestWriter {
        self.writer.as_mut().expect("a live writer")
    }

    /// Deletes the objects of entries a commit dropped, unless the process "crashes" first.
    async fn delete_or_crash(
        &mut self,
        removed: &[SegmentEntry],
        crash: bool,
        counts: &mut Counts,
    ) {
        if crash {
            self.writer = None;
            counts.crashes += 1;
            return;
        }
        for entry in removed {
            delete_segment_objects(self.store.as_ref(), &layout(), entry).await.expect("delete");
        }
    }

    /// Uploads the next closed segment; a crash before its commit leaves orphans.
    async fn upload(&mut self, crash: bool, counts: &mut Counts) {
        let length = 1 + self.rng.below(20) as i64;
        let end = self.model.end;
        let entry = upload(self.store.as_ref(), end, end + length - 1).await;
        if crash {
            self.writer = None;
            counts.crashes += 1;
            return;
        }
        self.writer().commit(&Change::Add(entry)).await.expect("add");
        self.model.end += length;
        counts.commits += 1;
    }

    /// Retention or DeleteRecords: the manifest first, then the objects.
    async fn expire(&mut self, crash: bool, counts: &mut Counts) {
        let Model { log_start, end } = self.model;
        if end == log_start {
            return;
        }
        let start = log_start + 1 + self.rng.below((end - log_start) as u64) as i64;
        let change = Change::Expire { log_start_offset: start };
        let removed = self.writer().commit(&change).await.expect("expire");
        self.model.log_start = start;
        counts.commits += 1;
        self.delete_or_crash(&removed, crash, counts).await;
    }

    /// Compaction: a run of 1 to 3 segments re-uploaded as 1 or 2, swapped in one change, the
    /// old objects deleted after it; a crash may come before the swap or after it.
    async fn replace(&mut self, crash: bool, counts: &mut Counts) {
        let segments = self.writer().manifest().segments.clone();
        if segments.is_empty() {
            return;
        }
        let first = self.rng.below(segments.len() as u64) as usize;
        let count = (1 + self.rng.below(3) as usize).min(segments.len() - first);
        let run = &segments[first..first + count];
        let (base, last) = (run[0].base_offset, run[count - 1].last_offset);
        // Each new segment ends at or after the log start (the first may begin below it, as
        // the one it replaces did).
        let low = base.max(self.model.log_start);
        let mut with = Vec::new();
        if last > low && self.rng.chance(50) {
            let middle = low + self.rng.below((last - low) as u64) as i64;
            with.push(upload(self.store.as_ref(), base, middle).await);
            with.push(upload(self.store.as_ref(), middle + 1, last).await);
        } else {
            with.push(upload(self.store.as_ref(), base, last).await);
        }
        if crash && self.rng.chance(50) {
            self.writer = None;
            counts.crashes += 1;
            return;
        }
        let replaced = run.iter().map(|entry| entry.id).collect();
        let removed =
            self.writer().commit(&Change::Replace { replaced, with }).await.expect("replace");
        counts.commits += 1;
        counts.replacements += 1;
        self.delete_or_crash(&removed, crash, counts).await;
    }

    /// Collects the orphans (nothing is in flight between steps), then checks by listing the
    /// folder (not with find_orphans, which is under test) that only named objects are left.
    async fn collect(&mut self, counts: &mut Counts) {
        let (store, seed) = (Arc::clone(&self.store), self.seed);
        let manifest = self.writer().manifest().clone();
        let orphans = find_orphans(store.as_ref(), &layout(), &manifest, &BTreeSet::new())
            .await
            .expect("list");
        for key in orphans {
            store.delete(&key).await.expect("delete orphan");
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
        let left: Vec<String> = store
            .list(Some(&layout().segments_dir()))
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .expect("list");
        let unnamed: Vec<&String> = left.iter().filter(|key| !named.contains(*key)).collect();
        assert!(unnamed.is_empty(), "seed {seed}: orphans left after a collection: {unnamed:?}");
        assert_eq!(left.len(), named.len(), "seed {seed}: a named object is missing");
    }
}

async fn run(seed: u64, counts: &mut Counts) {
    let mut sequence = Sequence {
        seed,
        store: Arc::new(InMemory::new()),
        rng: Rng(seed),
        model: Model { log_start: 0, end: 0 },
        writer: None,
        version: 0,
    };
    for _ in 0..30 {
        if sequence.writer.is_none() {
            sequence.restart().await;
            continue;
        }
        let crash = sequence.rng.chance(15);
        match sequence.rng.below(4) {
            0 => sequence.upload(crash, counts).await,
            1 => sequence.expire(crash, counts).await,
            2 => sequence.replace(crash, counts).await,
            _ => sequence.collect(counts).await,
        }
        let stored = check(sequence.store.as_ref(), sequence.model, sequence.version, seed).await;
        sequence.version = sequence.version.max(stored);
    }
}

#[test]
fn seeded_sequences_keep_the_remote_log_whole_and_its_bucket_clean() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let seeds: Vec<u64> = if let Ok(seed) = std::env::var("SEED") {
        vec![seed.parse().expect("SEED is a number")]
    } else {
        let n = std::env::var("SEGLOG_REMOTE_SEQUENCES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(10_000);
        (0..n).collect()
    };
    let mut counts = Counts::default();
    let n_seeds = seeds.len() as u64;
    for seed in seeds {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime.block_on(run(seed, &mut counts));
        }));
        assert!(ran.is_ok(), "the sequence of seed {seed} failed (run it alone with SEED={seed})");
    }
    // Every path ran, many times over.
    assert!(
        counts.commits > 5 * n_seeds
            && counts.replacements > n_seeds
            && counts.crashes > n_seeds
            && counts.orphans_collected > n_seeds,
        "{counts:?} over {n_seeds} sequences"
    );
}
