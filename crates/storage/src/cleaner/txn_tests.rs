//! The cleaner's transaction rules, on transactions the partition log itself tracked (data
//! batches from a client, COMMIT/ABORT markers from the coordinator, `.txnindex` entries written
//! at the ABORT markers), after Kafka's `LogCleanerTest` cases: aborted records go whatever their
//! key, committed ones are compacted like any other, a marker stays while data of its
//! transaction does and until its own delete horizon, the cleaner never passes the last stable
//! offset, and a cleaned segment's `.txnindex` lists the aborted transactions whose markers it
//! kept, so read_committed sees the same records before and after.

use seglog_format::{Batch, DecodeLimits};

use super::tests::{Harness, harness, key_view, small_map};
use crate::log::validator::AppendOrigin;
use crate::testing::txn_marker;

const PRODUCER_A: i64 = 7;
const PRODUCER_B: i64 = 8;

impl Harness {
    /// A transactional batch of `(key, value)` records of `producer` at `sequence`.
    fn txn_put(&self, producer: i64, sequence: i32, records: &[(&str, &str)]) -> i64 {
        let mut builder = seglog_format::RecordBatchBuilder::new(seglog_format::Compression::None)
            .producer(producer, 0, sequence)
            .transactional(true);
        for (key, value) in records {
            builder
                .push(self.clock_ms(), Some(key.as_bytes()), Some(value.as_bytes()), &[])
                .expect("push");
        }
        let batch = builder.build().expect("build");
        self.log()
            .append_as_sole_leader(&batch, AppendOrigin::Client, self.clock_ms())
            .expect("transactional append")
            .first_offset
    }

    /// The coordinator's marker ending `producer`'s transaction.
    fn end(&self, producer: i64, commit: bool) -> i64 {
        let marker = txn_marker(producer, 0, commit, 0, self.clock_ms());
        self.log()
            .append_as_sole_leader(&marker, AppendOrigin::Coordinator, self.clock_ms())
            .expect("marker")
            .first_offset
    }

    /// What a read_committed consumer sees: (key, value) in offset order.
    fn read_committed(&self) -> Vec<(String, String)> {
        let text = |bytes: Option<Vec<u8>>| {
            String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned()
        };
        crate::testing::read_committed_records(&self.log())
            .into_iter()
            .map(|(_, key, value)| (text(key), text(value)))
            .collect()
    }

    /// The markers left in the log: (offset, producer, is COMMIT).
    fn markers(&self) -> Vec<(i64, i64, bool)> {
        self.batch_bytes()
            .iter()
            .filter_map(|bytes| {
                let batch = Batch::new(bytes).expect("batch");
                if !batch.is_control_batch() {
                    return None;
                }
                let records = batch.records(DecodeLimits::default()).expect("records");
                let record = records.iter().next()?.expect("record");
                let kind = seglog_format::ControlRecordType::parse_key(record.key?).ok()?;
                Some((
                    record.offset,
                    batch.producer_id(),
                    kind == seglog_format::ControlRecordType::Commit,
                ))
            })
            .collect()
    }

    /// Fills the log with plain records so that earlier segments become cleanable.
    fn fill(&self, tag: &str) {
        for idx in 0..40 {
            self.put(&format!("fill-{}", idx % 4), Some(&format!("{tag}{idx}")));
        }
    }
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// Kafka's `testAbortedTransactionSpanningSegments` and `testCommittedTransactionSpanningSegments`:
/// the aborted records go, even those whose key has no later value; the committed ones stay
/// compacted; read_committed sees the same thing before and after the clean.
#[test]
fn aborted_records_go_committed_ones_are_compacted_and_read_committed_is_unchanged() {
    let h = harness(&[("delete.retention.ms", "86400000")], small_map());
    h.txn_put(PRODUCER_A, 0, &[("a", "committed-1"), ("shared", "x")]);
    h.txn_put(PRODUCER_B, 0, &[("b", "aborted-1"), ("shared", "y")]);
    h.put("a", Some("plain-later"));
    h.end(PRODUCER_A, true);
    h.end(PRODUCER_B, false);
    h.fill("f");
    let before: Vec<(String, String)> =
        h.read_committed().into_iter().filter(|(k, _)| !k.starts_with("fill")).collect();
    assert_eq!(before, pairs(&[("a", "committed-1"), ("shared", "x"), ("a", "plain-later")]));
    h.clean_fully(10);
    let after: Vec<(String, String)> =
        h.read_committed().into_iter().filter(|(k, _)| !k.starts_with("fill")).collect();
    assert_eq!(after, pairs(&[("shared", "x"), ("a", "plain-later")]), "each key's last value");
    // The aborted records are gone from the log itself, not just hidden: b had only an aborted
    // value, and shared's later aborted "y" did not replace the committed "x".
    let view = key_view(&h.records());
    assert!(!view.contains_key(b"b".as_slice()), "{view:?}");
    assert_eq!(view.get(b"shared".as_slice()).map(|(_, v)| v.clone()), Some(Some(b"x".to_vec())));
}

/// Kafka's `testAbortMarkerRemoval` / `testCommitMarkerRemoval`: a marker stays while its
/// transaction's data does and until its delete horizon (`delete.retention.ms` after the
/// round that first saw it empty of data), then goes.
#[test]
fn markers_stay_until_their_data_is_gone_and_their_horizon_has_passed() {
    let h = harness(&[("delete.retention.ms", "1000")], small_map());
    h.txn_put(PRODUCER_A, 0, &[("k", "aborted")]);
    let abort_offset = h.end(PRODUCER_A, false);
    h.txn_put(PRODUCER_B, 0, &[("k", "committed")]);
    let commit_offset = h.end(PRODUCER_B, true);
    h.put("k", Some("newer"));
    // Each producer's last batch is kept (emptied) while the producer is known, and with it
    // its transaction's marker (as in Kafka): later transactions make the first ones' batches
    // removable.
    for producer in [PRODUCER_A, PRODUCER_B] {
        h.txn_put(producer, 1, &[("later", "l")]);
        h.end(producer, true);
    }
    h.fill("f");
    h.clean_fully(10);
    let markers = h.markers();
    assert!(markers.contains(&(abort_offset, PRODUCER_A, false)), "{markers:?}");
    assert!(markers.contains(&(commit_offset, PRODUCER_B, true)), "{markers:?}");
    // Past the horizon, with the log dirtied again so that rounds run: both markers go (their
    // transactions' records are gone: the aborted one as aborted, the committed one replaced
    // by "newer").
    let now = h.clock_ms();
    h.fill("g");
    h.clock.set(now + 1001);
    h.clean_fully(10);
    h.fill("h");
    h.clock.set(now + 2002);
    h.clean_fully(10);
    let markers = h.markers();
    assert!(
        !markers.iter().any(|(offset, _, _)| *offset == abort_offset || *offset == commit_offset),
        "{markers:?}"
    );
    let committed: Vec<(String, String)> =
        h.read_committed().into_iter().filter(|(k, _)| k == "k").collect();
    assert_eq!(committed, pairs(&[("k", "newer")]));
}

/// Kafka's `testUndecidedTransactionalDataNotCleanable`: the cleaner stops at the last stable
/// offset, so an open transaction and everything after it stay as written.
#[test]
fn the_cleaner_never_passes_the_last_stable_offset() {
    let h = harness(&[], small_map());
    for idx in 0..20 {
        h.put("k", Some(&format!("early{idx}")));
    }
    let open_at = h.txn_put(PRODUCER_A, 0, &[("k", "undecided")]);
    for idx in 0..60 {
        h.put("k", Some(&format!("late{idx}")));
    }
    assert_eq!(h.log().last_stable_offset().expect("lso"), open_at);
    h.clean_fully(10);
    let records = h.records();
    let kept_from_open: Vec<i64> =
        records.iter().map(|(offset, _, _)| *offset).filter(|offset| *offset >= open_at).collect();
    assert_eq!(
        kept_from_open.len(),
        61,
        "nothing at or past the LSO {open_at} was cleaned: {records:?}"
    );
    // Below it, the segments wholly before the LSO's were compacted (the LSO's own segment is
    // the first uncleanable one).
    let early = records.iter().filter(|(offset, _, _)| *offset < open_at).count();
    assert!(early < 20, "{early} early records kept: {records:?}");
    assert!(records.iter().any(|(_, _, value)| value.as_deref() == Some(b"early19".as_slice())));
    // Once the transaction ends, the rest is cleanable.
    h.end(PRODUCER_A, true);
    h.fill("f");
    h.clean_fully(10);
    let view = key_view(&h.records());
    assert_eq!(view.get(b"k".as_slice()).map(|(_, v)| v.clone()), Some(Some(b"late59".to_vec())));
}

/// Kafka's `testCleanWithTransactionsSpanningSegments` for the `.txnindex`: after a clean,
/// each kept ABORT marker's transaction is in the `.txnindex` of the segment that holds the
/// marker, and a read_committed read of the cleaned log lists it.
#[test]
fn a_cleaned_segment_keeps_the_aborted_transactions_of_its_markers() {
    let h = harness(&[("delete.retention.ms", "86400000")], small_map());
    // A's transaction spans segments and is aborted; B's runs beside it and commits.
    let first = h.txn_put(PRODUCER_A, 0, &[("x", "a1")]);
    h.fill("f");
    h.txn_put(PRODUCER_B, 0, &[("y", "b1")]);
    h.txn_put(PRODUCER_A, 1, &[("x", "a2")]);
    let abort = h.end(PRODUCER_A, false);
    h.end(PRODUCER_B, true);
    h.fill("g");
    let before = h.read_committed();
    h.clean_fully(10);
    assert_eq!(h.read_committed().iter().filter(|(k, _)| k == "y").count(), 1);
    assert!(!h.read_committed().iter().any(|(k, _)| k == "x"), "aborted x is never read");
    let log = h.log();
    let indexed: Vec<(i64, i64, i64)> = log
        .segment_base_offsets()
        .expect("bases")
        .into_iter()
        .flat_map(|base| {
            let path = log.dir().join(format!("{base:020}.txnindex"));
            let bytes = h.fs_read(&path);
            bytes
                .chunks_exact(seglog_format::index::ABORTED_TXN_BYTES)
                .filter_map(|chunk| {
                    let chunk: &[u8; seglog_format::index::ABORTED_TXN_BYTES] =
                        chunk.try_into().ok()?;
                    seglog_format::AbortedTxn::decode(chunk).ok()
                })
                .map(|txn| (txn.producer_id, txn.first_offset, txn.last_offset))
                .collect::<Vec<_>>()
        })
        .collect();
    // A's last batch is kept (emptied), so its ABORT marker is kept, and indexed where it is.
    let markers = h.markers();
    assert!(markers.contains(&(abort, PRODUCER_A, false)), "{markers:?}");
    assert!(indexed.contains(&(PRODUCER_A, first, abort)), "{indexed:?} {markers:?}");
    let committed_before: Vec<&(String, String)> =
        before.iter().filter(|(k, _)| k == "y").collect();
    assert_eq!(committed_before.len(), 1);
}

impl Harness {
    /// The bytes of a file, or none if it does not exist.
    fn fs_read(&self, path: &std::path::Path) -> Vec<u8> {
        use crate::io::{Fs, OpenMode};
        match self.fs.open(path, OpenMode::Read) {
            Ok(file) => crate::io::read_all(file.as_ref()).expect("read"),
            Err(_) => Vec::new(),
        }
    }
}
