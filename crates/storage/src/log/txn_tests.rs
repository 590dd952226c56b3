//! Transactions through the partition log (Kafka's `UnifiedLogTest` / `LogSegmentTest` /
//! `LogLoaderTest` transaction cases): the last stable offset across interleaved transactions,
//! read_committed reads and their aborted transactions over several segments, open transactions
//! kept by snapshots and rebuilt by replays, the `.txnindex` refilled by recovery after a power
//! loss, truncation and retention; and a seeded model test (`txn_sim`) of producers beginning,
//! committing and aborting transactions through crashes, reopens and truncations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use seglog_format::{AbortedTxn, Batches, ControlRecordType, DecodeLimits, FileKind};

use super::load::{LoadParams, LoadReport};
use super::local_log::FetchedRecords;
use super::partition_log::{
    AbortedTransaction, ActiveProducer, AppendInfo, Isolation, PartitionLog, TopicPartition,
};
use super::validator::AppendOrigin;
use crate::config::LogConfig;
use crate::error::Error;
use crate::io::{Fs, OpenMode, SimFs, read_all};
use crate::segment::segment_path;
use crate::testing::{Rng, producer_batch, txn_batch, txn_marker};

fn dir() -> PathBuf {
    PathBuf::from("/logs/txn-0")
}

fn params(had_clean_shutdown: bool, recovery_point_checkpoint: i64) -> LoadParams {
    LoadParams {
        had_clean_shutdown,
        log_start_offset_checkpoint: 0,
        recovery_point_checkpoint,
        now_ms: 0,
    }
}

fn open_reporting(
    fs: &SimFs,
    config: &LogConfig,
    params: LoadParams,
) -> (PartitionLog, LoadReport) {
    fs.create_dir_all(&dir()).unwrap();
    for ancestor in dir().ancestors() {
        fs.sync_dir(ancestor).unwrap();
    }
    let tp = TopicPartition { topic: "txn".into(), partition: 0 };
    let (log, report) =
        PartitionLog::open(Arc::new(fs.clone()), &dir(), tp, config.clone(), params).unwrap();
    // A sole leader's high watermark is its log end (what the broker does at every load).
    log.maybe_increment_leader_high_watermark().unwrap();
    (log, report)
}

fn open(fs: &SimFs, config: &LogConfig) -> PartitionLog {
    open_reporting(fs, config, params(true, 0)).0
}

/// Segments of about `n_batches` one-record transactional batches.
fn segments_of(n_batches: u32) -> LogConfig {
    let batch_bytes = txn_batch(1, 0, 0, &[b"value-0"], 0).len() as u32;
    LogConfig { segment_bytes: batch_bytes * n_batches, ..LogConfig::default() }
}

/// One transactional record of `producer_id` at `seq` (epoch 0), as a sole leader appends it.
fn data(log: &PartitionLog, producer_id: i64, seq: i32, value: &str) -> AppendInfo {
    log.append_as_sole_leader(
        &txn_batch(producer_id, 0, seq, &[value], 1_000),
        AppendOrigin::Client,
        0,
    )
    .unwrap()
}

/// One record without a producer.
fn plain(log: &PartitionLog, value: &str) -> AppendInfo {
    log.append_as_sole_leader(
        &producer_batch([(1_000, None::<&[u8]>, value)]),
        AppendOrigin::Client,
        0,
    )
    .unwrap()
}

/// A marker of `producer_id` (epoch 0, coordinator epoch 0), as the coordinator appends it.
fn end(log: &PartitionLog, producer_id: i64, commit: bool) -> AppendInfo {
    log.append_as_sole_leader(
        &txn_marker(producer_id, 0, commit, 0, 2_000),
        AppendOrigin::Coordinator,
        0,
    )
    .unwrap()
}

/// One batch of a read: its offsets, producer, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadBatch {
    base_offset: i64,
    last_offset: i64,
    producer_id: i64,
    is_transactional: bool,
    /// `Some(true)` for a COMMIT marker, `Some(false)` for an ABORT, `None` for data.
    marker: Option<bool>,
    /// (offset, value) of its data records.
    records: Vec<(i64, String)>,
}

fn batches_of(bytes: &[u8]) -> Vec<ReadBatch> {
    let mut out = Vec::new();
    for item in Batches::new(bytes) {
        let Ok(item) = item else { break };
        let batch = item.batch;
        let records = batch.records(DecodeLimits::default()).unwrap();
        let mut read = ReadBatch {
            base_offset: batch.base_offset(DecodeLimits::default()).unwrap(),
            last_offset: batch.last_offset(),
            producer_id: batch.producer_id(),
            is_transactional: batch.is_transactional(),
            marker: None,
            records: Vec::new(),
        };
        for record in &records {
            let record = record.unwrap();
            if batch.is_control_batch() {
                let kind = ControlRecordType::parse_key(record.key.unwrap()).unwrap();
                read.marker = Some(kind == ControlRecordType::Commit);
            } else {
                let value = String::from_utf8(record.value.unwrap().to_vec()).unwrap();
                read.records.push((record.offset, value));
            }
        }
        out.push(read);
    }
    out
}

/// What a read_committed consumer keeps of `batches` given `aborted` (Kafka's
/// `CompletedFetch`: an aborted transaction's producer is skipped from the batch at or after the
/// transaction's first offset until its ABORT marker).
fn committed_view(batches: &[ReadBatch], aborted: &[AbortedTransaction]) -> Vec<(i64, String)> {
    let mut pending: Vec<AbortedTransaction> = aborted.to_vec();
    pending.sort_by_key(|txn| txn.first_offset);
    pending.reverse();
    let mut aborted_producers = BTreeSet::new();
    let mut out = Vec::new();
    for batch in batches {
        while pending.last().is_some_and(|txn| txn.first_offset <= batch.last_offset) {
            let txn = pending.pop().unwrap();
            aborted_producers.insert(txn.producer_id);
        }
        match batch.marker {
            Some(false) => {
                aborted_producers.remove(&batch.producer_id);
            }
            Some(true) => {}
            None => {
                if !(batch.is_transactional && aborted_producers.contains(&batch.producer_id)) {
                    out.extend(batch.records.iter().cloned());
                }
            }
        }
    }
    out
}

/// Every batch and aborted transaction of read_committed reads from `from` to the last stable
/// offset, in reads of at most `max_bytes`.
fn read_committed(
    log: &PartitionLog,
    from: i64,
    max_bytes: u32,
) -> (Vec<ReadBatch>, Vec<AbortedTransaction>) {
    let mut batches = Vec::new();
    let mut aborted: Vec<AbortedTransaction> = Vec::new();
    let mut next = from;
    loop {
        let info = log.read_info(next, max_bytes, Isolation::TxnCommitted, true).unwrap();
        let sliced = log.read_info_file_slice(next, max_bytes, Isolation::TxnCommitted, true);
        let sliced = sliced.unwrap();
        let listed = info.aborted_transactions.expect("read_committed lists aborted transactions");
        let fetch = info.data.unwrap();
        let read = batches_of(&fetch.records);
        // The read left in its file: the same bytes and offsets; its aborted transactions at
        // least those of the read into memory, which give the same committed view.
        assert_eq!(
            (sliced.high_watermark, sliced.last_stable_offset),
            (info.high_watermark, info.last_stable_offset)
        );
        let sliced_listed = sliced.aborted_transactions.expect("a sliced read lists them too");
        let sliced_bytes = match sliced.data.unwrap() {
            FetchedRecords::Memory(fetch) => fetch.records,
            FetchedRecords::File { slice, .. } => slice.read().unwrap(),
        };
        assert!(sliced_bytes == fetch.records, "sliced read from {next} (max {max_bytes})");
        assert!(listed.iter().all(|txn| sliced_listed.contains(txn)), "{sliced_listed:?}");
        assert_eq!(committed_view(&read, &sliced_listed), committed_view(&read, &listed));
        if read.is_empty() {
            assert!(listed.is_empty(), "an empty read lists nothing: {listed:?}");
            return (batches, aborted);
        }
        for txn in listed {
            if !aborted.contains(&txn) {
                aborted.push(txn);
            }
        }
        let last = read.last().unwrap();
        assert!(last.last_offset < info.last_stable_offset, "a read passed the LSO");
        next = last.last_offset + 1;
        batches.extend(read);
    }
}

/// The Kafka error code of a refused append (panics on anything but a validation error).
fn refused_code(result: crate::error::Result<AppendInfo>) -> (i16, &'static str) {
    match result {
        Err(Error::Validation(error)) => (error.error_code(), error.error_name()),
        other => panic!("not a validation error: {other:?}"),
    }
}

fn txn_index_entries(fs: &SimFs, base_offset: i64) -> Vec<AbortedTxn> {
    let path = segment_path(&dir(), base_offset, FileKind::TxnIndex);
    if !fs.exists(&path).unwrap() {
        return Vec::new();
    }
    let bytes = read_all(fs.open(&path, OpenMode::Read).unwrap().as_ref()).unwrap();
    bytes
        .chunks_exact(34)
        .map(|chunk| AbortedTxn::decode(chunk.try_into().unwrap()).unwrap())
        .collect()
}

fn all_txn_index_entries(fs: &SimFs, log: &PartitionLog) -> Vec<(i64, AbortedTxn)> {
    let mut out = Vec::new();
    for base in log.segment_base_offsets().unwrap() {
        out.extend(txn_index_entries(fs, base).into_iter().map(|txn| (base, txn)));
    }
    out
}

/// `testLastStableOffsetWithMixedProducerData` / `testFirstUnstableOffsetWithTransactionalData`:
/// the LSO is the first offset of the earliest open transaction, and a completed transaction
/// holds it until the high watermark passes its marker.
#[test]
fn the_last_stable_offset_follows_interleaved_transactions_of_two_producers() {
    let fs = SimFs::new();
    let log = open(&fs, &LogConfig::default());
    let leader = |bytes: &[u8], origin| log.append_as_leader(bytes, 0, origin, 0).unwrap();
    leader(&txn_batch(1, 0, 0, &["a0"], 0), AppendOrigin::Client); // 0
    assert_eq!((log.high_watermark().unwrap(), log.last_stable_offset().unwrap()), (0, 0));
    log.update_high_watermark(1).unwrap();
    assert_eq!(log.last_stable_offset().unwrap(), 0);
    leader(&txn_batch(2, 0, 0, &["b0"], 0), AppendOrigin::Client); // 1
    leader(&producer_batch([(0, None::<&[u8]>, "plain")]), AppendOrigin::Client); // 2
    log.update_high_watermark(3).unwrap();
    assert_eq!(log.last_stable_offset().unwrap(), 0);
    assert!(log.has_ongoing_transaction(1).unwrap() && log.has_ongoing_transaction(2).unwrap());
    assert!(!log.has_ongoing_transaction(3).unwrap());
    leader(&txn_marker(1, 0, true, 0, 0), AppendOrigin::Coordinator); // 3: commit of 1
    assert!(!log.has_ongoing_transaction(1).unwrap());
    assert_eq!(log.last_stable_offset().unwrap(), 0, "the commit is above the high watermark");
    log.update_high_watermark(4).unwrap();
    assert_eq!(log.last_stable_offset().unwrap(), 1, "producer 2's transaction holds it");
    let read = log.read_info(0, u32::MAX, Isolation::TxnCommitted, true).unwrap();
    assert_eq!((read.high_watermark, read.last_stable_offset), (4, 1));
    let offsets: Vec<i64> =
        batches_of(&read.data.unwrap().records).iter().map(|batch| batch.base_offset).collect();
    assert_eq!(offsets, [0]);
    assert_eq!(read.aborted_transactions, Some(vec![]));
    // Other isolations list no aborted transactions.
    let uncommitted = log.read_info(0, u32::MAX, Isolation::HighWatermark, true).unwrap();
    assert_eq!((uncommitted.aborted_transactions, uncommitted.last_stable_offset), (None, 1));
    leader(&txn_marker(2, 0, false, 3, 0), AppendOrigin::Coordinator); // 4: abort of 2
    log.update_high_watermark(5).unwrap();
    assert_eq!(log.last_stable_offset().unwrap(), 5);
    assert_eq!(
        log.active_producers().unwrap(),
        [
            ActiveProducer {
                producer_id: 1,
                producer_epoch: 0,
                last_sequence: 0,
                last_timestamp: 0,
                coordinator_epoch: 0,
                current_txn_start_offset: -1,
            },
            ActiveProducer {
                producer_id: 2,
                producer_epoch: 0,
                last_sequence: 0,
                last_timestamp: 0,
                coordinator_epoch: 3,
                current_txn_start_offset: -1,
            },
        ]
    );
    assert_eq!(
        txn_index_entries(&fs, 0),
        [AbortedTxn { producer_id: 2, first_offset: 1, last_offset: 4, last_stable_offset: 5 }]
    );
}

/// INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED through the log:
/// nothing is written.
#[test]
fn appends_that_break_the_transaction_state_are_refused() {
    let fs = SimFs::new();
    let log = open(&fs, &LogConfig::default());
    data(&log, 1, 0, "a0");
    let plain_batch = producer_batch([(0, None::<&[u8]>, "x")]);
    let mut idempotent =
        seglog_format::RecordBatchBuilder::new(seglog_format::Compression::None).producer(1, 0, 1);
    idempotent.push(0, None, Some(b"x"), &[]).unwrap();
    let refused = log.append_as_sole_leader(&idempotent.build().unwrap(), AppendOrigin::Client, 0);
    assert_eq!(refused_code(refused), (48, "INVALID_TXN_STATE"));
    log.append_as_sole_leader(&plain_batch, AppendOrigin::Client, 0).unwrap();
    end(&log, 1, true);
    let marker = |epoch, coordinator_epoch| {
        log.append_as_sole_leader(
            &txn_marker(1, epoch, true, coordinator_epoch, 0),
            AppendOrigin::Coordinator,
            0,
        )
    };
    marker(0, 4).unwrap();
    let fenced = marker(0, 3);
    assert_eq!(refused_code(fenced), (52, "TRANSACTION_COORDINATOR_FENCED"));
    log.append_as_sole_leader(&txn_marker(1, 2, false, 4, 0), AppendOrigin::Coordinator, 0)
        .unwrap();
    let old_epoch = marker(1, 4);
    assert_eq!(refused_code(old_epoch), (47, "INVALID_PRODUCER_EPOCH"));
    // A client may not write a marker at all.
    let from_client =
        log.append_as_sole_leader(&txn_marker(1, 2, true, 4, 0), AppendOrigin::Client, 0);
    assert_eq!(refused_code(from_client), (87, "INVALID_RECORD"));
    assert_eq!(log.log_end_offset().unwrap(), 5);
}

/// KIP-890's verification guard: a write verified with a remote coordinator opens its
/// transaction only if no marker ended the producer's transaction since the verification
/// started; once the transaction is open here, no guard is needed; without a guard (a local
/// coordinator, or a follower) nothing is checked.
#[test]
fn a_write_verified_before_the_transaction_ended_is_refused() {
    let fs = SimFs::new();
    let log = open(&fs, &LogConfig::default());
    let verified = |guard, seq, value: &str| {
        let batch = txn_batch(1, 0, seq, &[value], 1_000);
        log.append_as_sole_leader_verified(&batch, AppendOrigin::Client, 0, Some(guard))
    };
    let stale = log.start_verification(1).unwrap();
    assert_eq!(log.start_verification(1).unwrap(), stale, "one guard while one is out");
    // The coordinator aborts the transaction meanwhile: its marker lands first.
    end(&log, 1, false);
    let refused = verified(stale, 0, "late");
    assert_eq!(refused_code(refused), (48, "INVALID_TXN_STATE"));
    assert_eq!(log.log_end_offset().unwrap(), 1, "nothing opened a transaction");
    assert_eq!(log.last_stable_offset().unwrap(), 1);
    let fresh = log.start_verification(1).unwrap();
    assert_ne!(fresh, stale);
    verified(fresh, 0, "a0").unwrap();
    verified(stale, 1, "a1").expect("the transaction is open here: no guard needed");
    end(&log, 1, true);
    let unguarded = txn_batch(1, 0, 2, &[b"b0"], 1_000);
    log.append_as_sole_leader_verified(&unguarded, AppendOrigin::Client, 0, None).unwrap();
    assert_eq!(log.log_end_offset().unwrap(), 5);
    // A group coordinator's transactional offsets (TxnOffsetCommit) carry the guard too.
    let offsets_guard = log.start_verification(2).unwrap();
    end(&log, 2, false);
    let offsets = txn_batch(2, 0, 0, &[b"offsets"], 1_000);
    let refused = log.append_as_sole_leader_verified(
        &offsets,
        AppendOrigin::Coordinator,
        0,
        Some(offsets_guard),
    );
    assert_eq!(refused_code(refused), (48, "INVALID_TXN_STATE"));
    assert_eq!(log.log_end_offset().unwrap(), 6, "only the marker");
}

/// `testReadCommittedWithConcurrentHighWatermarkUpdates`-like, over tiny segments: a
/// read_committed read stops at the LSO and returns exactly the aborted transactions that
/// overlap it (Kafka's `collectAbortedTransactions`), each in its marker's segment's `.txnindex`
/// with the LSO Kafka's `lastStableOffset(completedTxn)` gives it.
#[test]
fn read_committed_stops_at_the_lso_and_lists_aborted_transactions_across_segments() {
    let fs = SimFs::new();
    let log = open(&fs, &segments_of(2));
    data(&log, 1, 0, "a1"); // 0
    data(&log, 2, 0, "b1"); // 1
    data(&log, 1, 1, "a2"); // 2
    end(&log, 1, false); // 3: abort of 1 while 2 is open at 1
    plain(&log, "n1"); // 4
    end(&log, 2, true); // 5
    data(&log, 3, 0, "c1"); // 6
    data(&log, 2, 1, "b2"); // 7
    end(&log, 2, false); // 8: abort of 2 while 3 is open at 6
    plain(&log, "n2"); // 9
    assert!(log.segment_base_offsets().unwrap().len() >= 4, "{:?}", log.segment_base_offsets());
    assert_eq!((log.high_watermark().unwrap(), log.last_stable_offset().unwrap()), (10, 6));
    let entries: Vec<AbortedTxn> =
        all_txn_index_entries(&fs, &log).into_iter().map(|(_, txn)| txn).collect();
    assert_eq!(
        entries,
        [
            AbortedTxn { producer_id: 1, first_offset: 0, last_offset: 3, last_stable_offset: 1 },
            AbortedTxn { producer_id: 2, first_offset: 7, last_offset: 8, last_stable_offset: 6 },
        ]
    );
    for (base, txn) in all_txn_index_entries(&fs, &log) {
        let bases = log.segment_base_offsets().unwrap();
        let holder = bases.iter().rev().find(|b| **b <= txn.last_offset).copied();
        assert_eq!(Some(base), holder, "{txn:?} is in its marker's segment");
    }
    let one_txn_only = [AbortedTransaction { producer_id: 1, first_offset: 0 }];
    let (batches, aborted) = read_committed(&log, 0, u32::MAX);
    assert_eq!(batches.last().map(|b| b.last_offset), Some(5), "the read stops below the LSO");
    assert_eq!(aborted, one_txn_only);
    assert_eq!(committed_view(&batches, &aborted), [(1, "b1".into()), (4, "n1".into())]);
    // One batch at a time: each read lists the transactions overlapping it.
    let first = log.read_info(0, 1, Isolation::TxnCommitted, true).unwrap();
    assert_eq!(first.aborted_transactions.as_deref(), Some(&one_txn_only[..]));
    let past = log.read_info(4, 1, Isolation::TxnCommitted, true).unwrap();
    assert_eq!(past.aborted_transactions, Some(vec![]), "the abort at 3 is behind the read");
    let at_lso = log.read_info(6, u32::MAX, Isolation::TxnCommitted, true).unwrap();
    assert!(at_lso.data.unwrap().records.is_empty());
    assert_eq!(at_lso.aborted_transactions, Some(vec![]));
    // The commit of 3 releases everything.
    end(&log, 3, true); // 10
    assert_eq!(log.last_stable_offset().unwrap(), 11);
    let (batches, aborted) = read_committed(&log, 0, u32::MAX);
    assert_eq!(
        aborted,
        [
            AbortedTransaction { producer_id: 1, first_offset: 0 },
            AbortedTransaction { producer_id: 2, first_offset: 7 },
        ]
    );
    let expected: Vec<(i64, String)> =
        [(1, "b1"), (4, "n1"), (6, "c1"), (9, "n2")].map(|(o, v)| (o, v.to_owned())).into();
    assert_eq!(committed_view(&batches, &aborted), expected);
    let (batches, aborted) = read_committed(&log, 4, 100);
    assert_eq!(aborted, [AbortedTransaction { producer_id: 2, first_offset: 7 }]);
    assert_eq!(committed_view(&batches, &aborted), expected[1..]);
}

/// `testRecoverFromSnapshotUnfinishedTransaction` through the log: a clean close's snapshot and
/// an unclean restart's replay both keep the open transaction, and with it the LSO.
#[test]
fn a_snapshot_and_a_reopen_keep_the_open_transaction_and_the_lso() {
    let fs = SimFs::new();
    let config = segments_of(2);
    let log = open(&fs, &config);
    plain(&log, "n0"); // 0
    plain(&log, "n1"); // 1
    data(&log, 1, 0, "a0"); // 2
    data(&log, 2, 0, "b0"); // 3
    end(&log, 2, false); // 4
    data(&log, 1, 1, "a1"); // 5
    plain(&log, "n2"); // 6
    assert_eq!(log.last_stable_offset().unwrap(), 2);
    log.close(0).unwrap();
    drop(log);
    let snapshot = read_all(
        fs.open(&dir().join("00000000000000000007.snapshot"), OpenMode::Read).unwrap().as_ref(),
    )
    .unwrap();
    let entries = seglog_format::decode_producer_snapshot(&snapshot).unwrap();
    assert_eq!(
        entries
            .iter()
            .map(|e| (e.producer_id, e.current_txn_first_offset, e.coordinator_epoch))
            .collect::<Vec<_>>(),
        [(1, 2, -1), (2, -1, 0)]
    );
    let log = open(&fs, &config);
    assert_eq!(log.ongoing_transactions().unwrap(), [(2, 1)]);
    assert_eq!(log.last_stable_offset().unwrap(), 2);
    // Unclean: everything flushed, then the power goes; the replay from the oldest snapshot
    // rebuilds the same state.
    log.flush(0).unwrap();
    drop(log);
    fs.crash(7);
    let (log, _) = open_reporting(&fs, &config, params(false, 0));
    assert_eq!(log.log_end_offset().unwrap(), 7);
    assert_eq!(log.ongoing_transactions().unwrap(), [(2, 1)]);
    assert_eq!(log.last_stable_offset().unwrap(), 2);
    let (batches, aborted) = read_committed(&log, 0, u32::MAX);
    assert_eq!(committed_view(&batches, &aborted), [(0, "n0".into()), (1, "n1".into())]);
    // The transaction goes on with its next sequence and ends.
    data(&log, 1, 2, "a2");
    end(&log, 1, true);
    assert_eq!(log.last_stable_offset().unwrap(), 9);
    let (batches, aborted) = read_committed(&log, 0, u32::MAX);
    assert_eq!(aborted, [AbortedTransaction { producer_id: 2, first_offset: 3 }]);
    let values: Vec<String> =
        committed_view(&batches, &aborted).into_iter().map(|(_, v)| v).collect();
    assert_eq!(values, ["n0", "n1", "a0", "a1", "n2", "a2"]);
}

/// A power loss after the ABORT marker reached the `.log` but before its `.txnindex` entry
/// was durable: recovery rebuilds the entry, byte for byte (Kafka's `LogSegment.recover`
/// refilling the index through `updateTxnIndex`). Without the marker, the transaction is open
/// again and the LSO stays at its first offset.
#[test]
fn a_power_loss_between_the_abort_marker_and_the_flush_rebuilds_the_txnindex_entry() {
    let config = LogConfig::default();
    let expected =
        AbortedTxn { producer_id: 1, first_offset: 1, last_offset: 3, last_stable_offset: 2 };
    for seed in 0..12u64 {
        for index_lost in [false, true] {
            let context = format!("seed {seed}, index lost {index_lost}");
            let fs = SimFs::new();
            let log = open(&fs, &config);
            plain(&log, "n0"); // 0
            data(&log, 1, 0, "a0"); // 1
            data(&log, 2, 0, "b0"); // 2
            log.flush(0).unwrap();
            end(&log, 1, false); // 3
            assert_eq!(txn_index_entries(&fs, 0), [expected], "{context}");
            // The .log is durable; the .txnindex is not.
            let log_path = segment_path(&dir(), 0, FileKind::Log);
            fs.open(&log_path, OpenMode::ReadWrite).unwrap().sync_data().unwrap();
            drop(log);
            fs.crash(seed);
            let txn_path = segment_path(&dir(), 0, FileKind::TxnIndex);
            if index_lost && fs.exists(&txn_path).unwrap() {
                fs.remove(&txn_path).unwrap();
            }
            let (log, report) = open_reporting(&fs, &config, params(false, 3));
            assert_eq!(log.log_end_offset().unwrap(), 4, "{context}");
            assert_eq!(report.recovered_base_offsets, [0], "{context}");
            assert_eq!(report.aborted_txns_restored, 1, "{context}");
            let bytes = read_all(fs.open(&txn_path, OpenMode::Read).unwrap().as_ref()).unwrap();
            assert_eq!(bytes, expected.encode(), "{context}");
            assert_eq!(log.ongoing_transactions().unwrap(), [(2, 2)], "{context}");
            assert_eq!(log.last_stable_offset().unwrap(), 2, "{context}");
            let (batches, aborted) = read_committed(&log, 0, u32::MAX);
            assert_eq!(aborted, [AbortedTransaction { producer_id: 1, first_offset: 1 }]);
            assert_eq!(committed_view(&batches, &aborted), [(0, "n0".into())], "{context}");
            // A clean reopen reads the rebuilt index as it is.
            log.close(0).unwrap();
            drop(log);
            let (log, report) = open_reporting(&fs, &config, params(true, 4));
            assert_eq!(report.aborted_txns_restored, 0, "{context}");
            assert_eq!(txn_index_entries(&fs, 0), [expected], "{context}");
            assert_eq!(log.last_stable_offset().unwrap(), 2, "{context}");
        }
        // The marker itself unflushed: it survives whole (and is indexed) or not at all (and
        // the transaction is open).
        let fs = SimFs::new();
        let log = open(&fs, &config);
        plain(&log, "n0");
        data(&log, 1, 0, "a0");
        data(&log, 2, 0, "b0");
        log.flush(0).unwrap();
        end(&log, 1, false);
        drop(log);
        fs.crash(seed);
        let (log, _) = open_reporting(&fs, &config, params(false, 3));
        match log.log_end_offset().unwrap() {
            4 => {
                assert_eq!(txn_index_entries(&fs, 0), [expected], "seed {seed}");
                assert_eq!(log.ongoing_transactions().unwrap(), [(2, 2)], "seed {seed}");
            }
            3 => {
                assert!(txn_index_entries(&fs, 0).is_empty(), "seed {seed}");
                assert_eq!(log.ongoing_transactions().unwrap(), [(1, 1), (2, 2)], "seed {seed}");
                assert_eq!(log.last_stable_offset().unwrap(), 1, "seed {seed}");
            }
            other => panic!("seed {seed}: log end {other}"),
        }
    }
}

/// `testTruncateToRemovesAbortedTransactions`-like: a truncation below a marker reopens its
/// transaction (the replay rebuilds it) and takes the marker's `.txnindex` entry with it.
#[test]
fn a_truncation_below_a_marker_reopens_the_transaction() {
    let fs = SimFs::new();
    let config = segments_of(2);
    let log = open(&fs, &config);
    data(&log, 1, 0, "a0"); // 0
    data(&log, 1, 1, "a1"); // 1
    end(&log, 1, true); // 2
    plain(&log, "n0"); // 3
    assert_eq!(log.last_stable_offset().unwrap(), 4);
    assert!(log.truncate_to(2, 0).unwrap());
    assert_eq!(log.ongoing_transactions().unwrap(), [(0, 1)]);
    assert!(log.has_ongoing_transaction(1).unwrap());
    assert_eq!((log.high_watermark().unwrap(), log.last_stable_offset().unwrap()), (2, 0));
    end(&log, 1, false); // 2 again, an ABORT now
    let entry =
        AbortedTxn { producer_id: 1, first_offset: 0, last_offset: 2, last_stable_offset: 3 };
    assert_eq!(all_txn_index_entries(&fs, &log).last().map(|(_, txn)| *txn), Some(entry));
    let (batches, aborted) = read_committed(&log, 0, u32::MAX);
    assert_eq!(committed_view(&batches, &aborted), []);
    assert!(log.truncate_to(2, 0).unwrap());
    assert!(all_txn_index_entries(&fs, &log).is_empty());
    assert_eq!(log.ongoing_transactions().unwrap(), [(0, 1)]);
    // Below the transaction's first batch, it is gone entirely.
    assert!(log.truncate_to(0, 0).unwrap());
    assert_eq!(log.ongoing_transactions().unwrap(), []);
    assert_eq!(log.last_stable_offset().unwrap(), 0);
    assert!(!log.has_ongoing_transaction(1).unwrap());
}

/// Retention past transactions: the deleted segments' `.txnindex` files go with them, and an
/// open transaction whose first offset went leaves the LSO at the log start offset (Kafka's
/// `maybeIncrementFirstUnstableOffset`).
#[test]
fn retention_past_a_transaction() {
    let fs = SimFs::new();
    let config = segments_of(2);
    let log = open(&fs, &config);
    data(&log, 1, 0, "a0"); // 0
    end(&log, 1, false); // 1
    data(&log, 2, 0, "b0"); // 2: open throughout
    plain(&log, "n0"); // 3
    plain(&log, "n1"); // 4
    plain(&log, "n2"); // 5
    plain(&log, "n3"); // 6
    let first_txn_segment = all_txn_index_entries(&fs, &log)[0].0;
    assert_eq!(log.last_stable_offset().unwrap(), 2);
    log.maybe_increment_log_start_offset(4).unwrap();
    assert!(log.delete_segments_below_log_start(0).unwrap() > 0);
    let live = segment_path(&dir(), first_txn_segment, FileKind::TxnIndex);
    assert!(!fs.exists(&live).unwrap(), "the .txnindex went with its segment");
    assert!(all_txn_index_entries(&fs, &log).is_empty());
    let start = log.log_start_offset().unwrap();
    assert_eq!(start, 4);
    assert_eq!(log.ongoing_transactions().unwrap(), [(2, 2)]);
    assert_eq!(log.last_stable_offset().unwrap(), start);
    let read = log.read_info(start, u32::MAX, Isolation::TxnCommitted, true).unwrap();
    assert!(read.data.unwrap().records.is_empty());
    assert_eq!(read.aborted_transactions, Some(vec![]));
    end(&log, 2, true); // 7
    assert_eq!(log.last_stable_offset().unwrap(), 8);
    let (batches, aborted) = read_committed(&log, start, u32::MAX);
    let values: Vec<String> =
        committed_view(&batches, &aborted).into_iter().map(|(_, v)| v).collect();
    assert_eq!(values, ["n1", "n2", "n3"]);
    // A restart keeps it so.
    log.close(0).unwrap();
    drop(log);
    let (log, _) = open_reporting(
        &fs,
        &config,
        LoadParams { log_start_offset_checkpoint: 4, ..params(true, 8) },
    );
    assert_eq!((log.log_start_offset().unwrap(), log.last_stable_offset().unwrap()), (4, 8));
}

/// `LogSegmentTest.testRecoverTransactionIndex` through the log: recovering the segment at 100
/// rebuilds `AbortedTxn(pid 10, first 102, last 106, LSO 100)`; when the transaction began in an
/// earlier segment that is not recovered, its first offset comes from the producer state the
/// replay starts from (the snapshot at the recovered segment's base).
#[test]
fn recovery_rebuilds_the_txnindex_from_the_producer_state() {
    let expected = AbortedTxn {
        producer_id: 10,
        first_offset: 102,
        last_offset: 106,
        last_stable_offset: 100,
    };
    for roll_before_the_abort in [false, true] {
        let context = format!("roll {roll_before_the_abort}");
        let fs = SimFs::new();
        let config = LogConfig::default();
        let log = open(&fs, &config);
        log.truncate_fully_and_start_at(100, 0).unwrap();
        let two = ["a", "b"];
        log.append_as_sole_leader(&txn_batch(5, 0, 100, &two, 0), AppendOrigin::Client, 0).unwrap();
        log.append_as_sole_leader(&txn_batch(10, 0, 100, &two, 0), AppendOrigin::Client, 0)
            .unwrap();
        if roll_before_the_abort {
            log.roll(0).unwrap();
        }
        log.append_as_sole_leader(
            &producer_batch([(0, None::<&[u8]>, "a"), (0, None, "b")]),
            AppendOrigin::Client,
            0,
        )
        .unwrap();
        end(&log, 10, false); // 106
        end(&log, 5, true); // 107
        let marker_segment = if roll_before_the_abort { 104 } else { 100 };
        assert_eq!(txn_index_entries(&fs, marker_segment), [expected], "{context}");
        log.flush(0).unwrap();
        drop(log);
        fs.remove(&segment_path(&dir(), marker_segment, FileKind::TxnIndex)).unwrap();
        let (log, report) = open_reporting(
            &fs,
            &config,
            LoadParams { log_start_offset_checkpoint: 100, ..params(false, marker_segment) },
        );
        assert_eq!(report.recovered_base_offsets, [marker_segment], "{context}");
        assert_eq!(log.log_end_offset().unwrap(), 108, "{context}");
        assert_eq!(txn_index_entries(&fs, marker_segment), [expected], "{context}");
        assert_eq!(log.last_stable_offset().unwrap(), 108, "{context}");
    }
}

/// One entry of the model log (every batch is one record).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A record; `producer_id` is -1 outside transactions.
    Data { producer_id: i64, value: String },
    /// A marker.
    Marker { producer_id: i64, commit: bool },
}

/// What the model derives from its entries.
#[derive(Debug, Default)]
struct Derived {
    /// Open transactions: producer -> first offset.
    open: BTreeMap<i64, i64>,
    /// Per producer, its data batches (the next sequence).
    n_data: BTreeMap<i64, i32>,
    /// Offsets of the records of committed transactions and plain records.
    committed: BTreeSet<i64>,
}

fn derive(entries: &[Entry]) -> Derived {
    let mut derived = Derived::default();
    let mut members: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for (offset, entry) in entries.iter().enumerate() {
        let offset = offset as i64;
        match entry {
            Entry::Data { producer_id: -1, .. } => {
                derived.committed.insert(offset);
            }
            Entry::Data { producer_id, .. } => {
                derived.open.entry(*producer_id).or_insert(offset);
                members.entry(*producer_id).or_default().push(offset);
                *derived.n_data.entry(*producer_id).or_default() += 1;
            }
            Entry::Marker { producer_id, commit } => {
                derived.open.remove(producer_id);
                let records = members.remove(producer_id).unwrap_or_default();
                if *commit {
                    derived.committed.extend(records);
                }
            }
        }
    }
    derived
}

fn check_model(log: &PartitionLog, entries: &[Entry], rng: &mut Rng, context: &str) {
    let derived = derive(entries);
    let log_end = entries.len() as i64;
    assert_eq!(log.log_end_offset().unwrap(), log_end, "{context}: log end");
    assert_eq!(log.high_watermark().unwrap(), log_end, "{context}: high watermark");
    let expected_lso = derived.open.values().min().copied().unwrap_or(log_end).min(log_end);
    let lso = log.last_stable_offset().unwrap();
    assert_eq!(lso, expected_lso, "{context}: LSO (open {:?})", derived.open);
    let mut ongoing: Vec<(i64, i64)> = derived.open.iter().map(|(p, f)| (*f, *p)).collect();
    ongoing.sort_unstable();
    assert_eq!(log.ongoing_transactions().unwrap(), ongoing, "{context}: ongoing");
    for producer in log.active_producers().unwrap() {
        let expected = derived.open.get(&producer.producer_id).copied().unwrap_or(-1);
        assert_eq!(producer.current_txn_start_offset, expected, "{context}: {producer:?}");
    }
    // The read_committed view from a random start in reads of random sizes: exactly the
    // decided-committed and plain records below the LSO.
    let from = rng.below(lso as u64 + 1) as i64;
    let max_bytes = [1, 100, 300, u32::MAX][rng.below(4) as usize];
    let (batches, aborted) = read_committed(log, from, max_bytes);
    let view: Vec<i64> = committed_view(&batches, &aborted).into_iter().map(|(o, _)| o).collect();
    let expected: Vec<i64> = derived.committed.range(from..lso).copied().collect();
    assert_eq!(view, expected, "{context}: read_committed from {from} (max {max_bytes})");
    for (offset, value) in committed_view(&batches, &aborted) {
        let Entry::Data { value: model_value, .. } = &entries[offset as usize] else {
            panic!("{context}: a marker's offset {offset} in the view");
        };
        assert_eq!(&value, model_value, "{context}: value at {offset}");
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let fs = SimFs::new();
    let config = segments_of(3);
    let (mut log, _) = open_reporting(&fs, &config, params(true, 0));
    let mut entries: Vec<Entry> = Vec::new();
    let mut durable: i64 = 0;
    let producers = [1i64, 2, 3];
    for step in 0..steps {
        let context = format!(
            "seed {seed} step {step}; reproduce: SEED={seed} ITERATIONS=1 cargo test -p seglog-storage txn_sim"
        );
        let producer_id = producers[rng.below(3) as usize];
        match rng.below(20) {
            0..=7 => {
                let seq = derive(&entries).n_data.get(&producer_id).copied().unwrap_or(0);
                let value = format!("p{producer_id}-{step}");
                let info = data(&log, producer_id, seq, &value);
                assert_eq!(info.first_offset, entries.len() as i64, "{context}");
                entries.push(Entry::Data { producer_id, value });
            }
            8..=11 => {
                let commit = rng.coin();
                end(&log, producer_id, commit);
                entries.push(Entry::Marker { producer_id, commit });
            }
            12..=13 => {
                let value = format!("plain-{step}");
                plain(&log, &value);
                entries.push(Entry::Data { producer_id: -1, value });
            }
            14..=15 => {
                durable = log.flush(0).unwrap();
            }
            16..=17 => {
                // Power loss, then a reopen from the recovery point a checkpoint would hold.
                if rng.coin() {
                    durable = log.flush(0).unwrap();
                }
                drop(log);
                fs.crash(rng.next_u64());
                log = open_reporting(&fs, &config, params(false, durable)).0;
                let log_end = log.log_end_offset().unwrap();
                assert!(log_end >= durable, "{context}: lost flushed data");
                assert!(log_end <= entries.len() as i64, "{context}: log end grew");
                entries.truncate(log_end as usize);
                durable = durable.min(log_end);
            }
            18 => {
                log.close(0).unwrap();
                drop(log);
                let log_end = entries.len() as i64;
                log = open_reporting(&fs, &config, params(true, log_end)).0;
                durable = log_end;
            }
            _ => {
                let target = rng.below(entries.len() as u64 + 1) as i64;
                log.truncate_to(target, 0).unwrap();
                entries.truncate(target as usize);
                log.maybe_increment_leader_high_watermark().unwrap();
                durable = durable.min(target);
            }
        }
        check_model(&log, &entries, &mut rng, &context);
    }
    // Every transaction decided: each committed one is read whole, no aborted record is.
    for producer_id in producers {
        let commit = rng.coin();
        end(&log, producer_id, commit);
        entries.push(Entry::Marker { producer_id, commit });
    }
    let context = format!("seed {seed} at the end");
    check_model(&log, &entries, &mut rng, &context);
    let (batches, aborted) = read_committed(&log, 0, u32::MAX);
    let view: BTreeSet<i64> =
        committed_view(&batches, &aborted).into_iter().map(|(o, _)| o).collect();
    assert_eq!(view, derive(&entries).committed, "{context}: the whole committed view");
}

#[test]
fn txn_sim() {
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok());
    let iterations: u64 =
        std::env::var("ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let start = seed.unwrap_or(1);
    for seed in start..start + iterations {
        if let Err(panic) = std::panic::catch_unwind(|| run(seed, 70)) {
            eprintln!(
                "txn_sim failed: SEED={seed} ITERATIONS=1 cargo test -p seglog-storage txn_sim"
            );
            std::panic::resume_unwind(panic);
        }
    }
}
