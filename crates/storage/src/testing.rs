//! Test support shared by this crate's tests, the other crates' tests and the benches (feature
//! `sim`, or in this crate's tests): the seeded generator, a `SimFs` with a durable directory,
//! where the real Kafka fixtures are, producer batches, transactional batches and markers.

use std::path::{Path, PathBuf};

use seglog_format::{Compression, RecordBatchBuilder};

use crate::io::{Fs, OpenMode, SimFs, StdFs, read_all};

/// SplitMix64 (Steele, Lea and Flood), the one seeded generator of the workspace's simulations
/// and of `SimFs`'s crashes and fault plans: small, deterministic for a seed, good enough to
/// drive a simulation. The field is the state; `Rng(seed)` seeds it.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(crate::splitmix::GAMMA);
        crate::splitmix::mix(self.0)
    }

    /// A value in `0..n` (0 when `n` is 0; the modulo bias is negligible here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }
}

/// The `kafka-real` fixture sets (`seglog_format::testing::kafka_real_fixtures`, looked at
/// through `StdFs`): `None`, said loudly, when they are missing outside CI.
pub fn kafka_real_fixtures() -> Option<PathBuf> {
    seglog_format::testing::kafka_real_fixtures(|dir| StdFs.list(dir).is_ok())
}

/// Copies a directory tree through `StdFs` (fixtures are read-only, so tests that write work
/// on a copy).
///
/// # Panics
/// On any I/O error: it is test support.
#[expect(clippy::unwrap_used, reason = "test support: a failed copy fails the test")]
pub fn copy_tree(from: &Path, to: &Path) {
    let fs = StdFs;
    fs.create_dir_all(to).unwrap();
    for path in fs.list(from).unwrap() {
        let target = to.join(path.file_name().unwrap());
        if fs.list(&path).is_ok() {
            copy_tree(&path, &target);
        } else {
            let bytes = read_all(fs.open(&path, OpenMode::Read).unwrap().as_ref()).unwrap();
            fs.open(&target, OpenMode::CreateNew).unwrap().write_all_at(&bytes, 0).unwrap();
        }
    }
}

/// A `SimFs` holding the directory `dir` (absolute, such as `/d` or `/d/t-0`), durable: the
/// directory and every ancestor synced, so only what a test does after this can be lost.
///
/// # Panics
/// When `SimFs` refuses the path: it is test support.
#[expect(clippy::unwrap_used, reason = "test support: a failed set-up fails the test")]
pub fn sim_with_dir(dir: &str) -> SimFs {
    let fs = SimFs::new();
    let dir = Path::new(dir);
    fs.create_dir_all(dir).unwrap();
    let mut ancestors: Vec<&Path> = dir.ancestors().collect();
    ancestors.reverse();
    for ancestor in ancestors {
        fs.sync_dir(ancestor).unwrap();
    }
    fs
}

/// A producer batch (uncompressed, base offset 0, as a client sends it) with one record per item
/// of `records`: `(timestamp_ms, key, value)`.
///
/// # Panics
/// When the builder refuses a record: it is test support.
#[expect(clippy::unwrap_used, reason = "test support: a batch that cannot be built fails the test")]
pub fn producer_batch<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    records: impl IntoIterator<Item = (i64, Option<K>, V)>,
) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for (timestamp_ms, key, value) in records {
        builder
            .push(timestamp_ms, key.as_ref().map(AsRef::as_ref), Some(value.as_ref()), &[])
            .unwrap();
    }
    builder.build().unwrap()
}

/// The batch the benches append: uncompressed, from `base_offset`, records of `record_bytes`
/// (a fixed pattern, no key) up to `batch_bytes`, timestamps from 1,700,000,000,000 ms by
/// offset.
///
/// # Panics
/// When the builder refuses a record: it is test support.
#[expect(clippy::unwrap_used, reason = "test support: a batch that cannot be built fails the run")]
pub fn filled_batch(base_offset: i64, record_bytes: usize, batch_bytes: usize) -> Vec<u8> {
    let value: Vec<u8> = (0..record_bytes).map(|i| (i * 31 % 251) as u8).collect();
    let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(base_offset);
    let mut offset = base_offset;
    while builder.estimated_size_bytes() + record_bytes + 16 <= batch_bytes {
        builder.push(1_700_000_000_000 + offset, None, Some(&value), &[]).unwrap();
        offset += 1;
    }
    builder.build().unwrap()
}

/// A transactional producer batch (uncompressed, base offset 0): `values` as records without
/// keys, timestamps from `timestamp_ms`, at `base_sequence` of `producer_id` / `producer_epoch`.
///
/// # Panics
/// When the builder refuses a record: it is test support.
#[expect(clippy::unwrap_used, reason = "test support: a batch that cannot be built fails the test")]
pub fn txn_batch<V: AsRef<[u8]>>(
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    values: &[V],
    timestamp_ms: i64,
) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .producer(producer_id, producer_epoch, base_sequence)
        .transactional(true);
    for (idx, value) in values.iter().enumerate() {
        builder.push(timestamp_ms + idx as i64, None, Some(value.as_ref()), &[]).unwrap();
    }
    builder.build().unwrap()
}

/// A COMMIT (`commit`) or ABORT transaction marker of `producer_id` / `producer_epoch` from a
/// coordinator at `coordinator_epoch`, as the transaction coordinator writes it (append it with
/// `AppendOrigin::Coordinator`).
///
/// # Panics
/// Never for these arguments: it is test support.
#[expect(
    clippy::unwrap_used,
    reason = "test support: a marker that cannot be built fails the test"
)]
pub fn txn_marker(
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
    timestamp_ms: i64,
) -> Vec<u8> {
    let kind = if commit {
        seglog_format::ControlRecordType::Commit
    } else {
        seglog_format::ControlRecordType::Abort
    };
    seglog_format::end_transaction_marker_batch(
        0,
        timestamp_ms,
        0,
        producer_id,
        producer_epoch,
        kind,
        coordinator_epoch,
    )
    .unwrap()
}

/// A key and value as read back (`None`: absent), with the record's offset.
pub type ReadRecord = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// Every record a read_committed consumer gets from `log`, from its log start to its last stable
/// offset, in offset order (the reads' aborted transactions skipped by
/// [`crate::log::read_committed::AbortedFilter`], markers left out).
pub fn read_committed_records(log: &crate::log::partition_log::PartitionLog) -> Vec<ReadRecord> {
    use crate::log::partition_log::Isolation;
    let lso = log.last_stable_offset().expect("the LSO");
    let mut next = log.log_start_offset().expect("the log start");
    let log_start = next;
    let mut filter = crate::log::read_committed::AbortedFilter::default();
    let mut out = Vec::new();
    while next < lso {
        let read = log.read_info(next, 1 << 20, Isolation::TxnCommitted, true).expect("a read");
        filter.add(&read.aborted_transactions.expect("a read_committed read lists them"));
        let data = read.data.expect("records");
        if data.records.is_empty() {
            break;
        }
        for entry in seglog_format::Batches::new(&data.records) {
            let batch = entry.expect("a batch").batch;
            next = batch.next_offset();
            if filter.skips(&batch) {
                continue;
            }
            for record in &batch.records(seglog_format::DecodeLimits::default()).expect("records") {
                let record = record.expect("a record");
                if record.offset >= log_start {
                    out.push((
                        record.offset,
                        record.key.map(<[u8]>::to_vec),
                        record.value.map(<[u8]>::to_vec),
                    ));
                }
            }
        }
    }
    out
}
