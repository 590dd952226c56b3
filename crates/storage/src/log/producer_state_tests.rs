//! Tests of `producer_state.rs` (Kafka's `ProducerStateManagerTest` cases that apply): the
//! idempotent producer's checks, snapshots and their files, and the transaction state.

use super::*;
use crate::io::SimFs;

fn dir() -> PathBuf {
    PathBuf::from("/logs/p-0")
}

fn manager(fs: &SimFs) -> ProducerStateManager {
    fs.create_dir_all(&dir()).unwrap();
    ProducerStateManager::open(Arc::new(fs.clone()), &dir()).unwrap()
}

fn batch(first_seq: i32, last_seq: i32, first_offset: i64) -> BatchMetadata {
    BatchMetadata {
        first_seq,
        last_seq,
        first_offset,
        last_offset: first_offset + i64::from(last_seq - first_seq),
        timestamp: 1_000 + first_offset,
    }
}

#[test]
fn sequences_duplicates_and_epochs() {
    let mut state = manager(&SimFs::new());
    assert_eq!(state.check(7, 0, 0, 2), Ok(ProducerCheck::Append));
    state.update(7, 0, batch(0, 2, 100));
    // The retry of the same batch gets its offsets back.
    assert_eq!(state.check(7, 0, 0, 2), Ok(ProducerCheck::Duplicate(batch(0, 2, 100))));
    // The next batch must start at 3.
    assert_eq!(
        state.check(7, 0, 5, 6),
        Err(ValidationError::OutOfOrderSequence { producer_id: 7, expected: 3, found: 5 })
    );
    assert_eq!(state.check(7, 0, 3, 3), Ok(ProducerCheck::Append));
    state.update(7, 0, batch(3, 3, 103));
    // An older epoch is fenced; a newer one starts again at 0.
    assert_eq!(
        state.check(7, -1, 0, 0),
        Err(ValidationError::InvalidProducerEpoch { producer_id: 7, epoch: -1, current_epoch: 0 })
    );
    assert_eq!(
        state.check(7, 1, 4, 4),
        Err(ValidationError::OutOfOrderSequence { producer_id: 7, expected: 0, found: 4 })
    );
    assert_eq!(state.check(7, 1, 0, 0), Ok(ProducerCheck::Append));
    state.update(7, 1, batch(0, 0, 104));
    assert_eq!(state.check(7, 1, 0, 0), Ok(ProducerCheck::Duplicate(batch(0, 0, 104))));
    // Another producer is independent.
    assert_eq!(state.check(8, 0, 0, 0), Ok(ProducerCheck::Append));
}

#[test]
fn five_batches_are_remembered_and_sequences_wrap() {
    let mut state = manager(&SimFs::new());
    for i in 0..7 {
        state.update(1, 0, batch(i, i, i64::from(i)));
    }
    assert_eq!(state.check(1, 0, 2, 2), Ok(ProducerCheck::Duplicate(batch(2, 2, 2))));
    // Older than the last five: not a known duplicate, and out of sequence.
    assert_eq!(
        state.check(1, 0, 1, 1),
        Err(ValidationError::OutOfOrderSequence { producer_id: 1, expected: 7, found: 1 })
    );
    let mut wrapping = manager(&SimFs::new());
    wrapping.update(2, 0, batch(i32::MAX - 1, i32::MAX, 0));
    assert_eq!(wrapping.check(2, 0, 0, 4), Ok(ProducerCheck::Append));
}

/// A snapshot keeps each producer's epoch and last batch (Kafka's `testTakeSnapshot`,
/// `testRecoverFromSnapshot`), under the name of its offset.
#[test]
fn snapshots_keep_the_last_batch_of_each_producer() {
    let fs = SimFs::new();
    let mut state = manager(&fs);
    state.update(1, 0, batch(0, 1, 0));
    state.update(1, 0, batch(2, 4, 2));
    let wrapped = BatchMetadata {
        first_seq: i32::MAX,
        last_seq: 1,
        first_offset: 5,
        last_offset: 7,
        timestamp: 1_005,
    };
    state.update(2, 3, wrapped);
    state.update_map_end_offset(8);
    assert!(state.take_snapshot(true).unwrap());
    assert!(!state.take_snapshot(true).unwrap(), "not again at the same offset");
    let path = dir().join("00000000000000000008.snapshot");
    let bytes = crate::io::read_all(fs.open(&path, OpenMode::Read).unwrap().as_ref()).unwrap();
    let entries = decode_producer_snapshot(&bytes).unwrap();
    assert_eq!(
        entries,
        [
            ProducerSnapshotEntry {
                producer_id: 1,
                producer_epoch: 0,
                last_sequence: 4,
                last_offset: 4,
                offset_delta: 2,
                timestamp: 1_002,
                coordinator_epoch: -1,
                current_txn_first_offset: -1,
            },
            ProducerSnapshotEntry {
                producer_id: 2,
                producer_epoch: 3,
                last_sequence: 1,
                last_offset: 7,
                offset_delta: 2,
                timestamp: 1_005,
                coordinator_epoch: -1,
                current_txn_first_offset: -1,
            },
        ]
    );
    // A new manager over the directory loads it: the last batch is a duplicate, the one
    // before is out of sequence (Kafka keeps one batch per producer in a snapshot).
    let mut reloaded = manager(&fs);
    assert_eq!(reloaded.snapshot_offsets(), [8]);
    reloaded.truncate_and_reload(0, 8).unwrap();
    assert_eq!(reloaded.map_end_offset(), 8);
    assert_eq!(reloaded.check(1, 0, 2, 4), Ok(ProducerCheck::Duplicate(batch(2, 4, 2))));
    assert_eq!(
        reloaded.check(1, 0, 0, 1),
        Err(ValidationError::OutOfOrderSequence { producer_id: 1, expected: 5, found: 0 })
    );
    assert_eq!(reloaded.check(2, 3, i32::MAX, 1), Ok(ProducerCheck::Duplicate(wrapped)));
    assert_eq!(reloaded.check(2, 3, 2, 2), Ok(ProducerCheck::Append));
}

/// `testLoadFromCorruptSnapshotFile` / `testSkipSnapshotIfOffsetUnchanged`: a corrupt newest
/// snapshot is deleted and the next older one loaded; without any, the state is empty and
/// ends at the log start.
#[test]
fn a_corrupt_snapshot_falls_back_to_an_older_one() {
    let fs = SimFs::new();
    let mut state = manager(&fs);
    state.update(1, 0, batch(0, 0, 0));
    state.update_map_end_offset(1);
    state.take_snapshot(true).unwrap();
    state.update(1, 0, batch(1, 1, 1));
    state.update_map_end_offset(2);
    state.take_snapshot(true).unwrap();
    let newest = dir().join("00000000000000000002.snapshot");
    let file = fs.open(&newest, OpenMode::ReadWrite).unwrap();
    file.write_all_at(&[0xFF], 20).unwrap();
    let mut reloaded = manager(&fs);
    reloaded.truncate_and_reload(0, 2).unwrap();
    let corrupt = reloaded.take_corrupt_snapshots();
    assert_eq!(corrupt.len(), 1);
    assert_eq!(corrupt[0].path, newest);
    assert!(corrupt[0].reason.contains("crc"), "{}", corrupt[0].reason);
    assert!(!fs.exists(&newest).unwrap());
    assert_eq!((reloaded.map_end_offset(), reloaded.snapshot_offsets()), (1, vec![1]));
    assert_eq!(reloaded.last_entry(1), Some((0, Some(batch(0, 0, 0)))));
    // An empty file (a torn write) is corrupt too; with nothing left, the state is empty.
    let oldest = dir().join("00000000000000000001.snapshot");
    fs.open(&oldest, OpenMode::ReadWrite).unwrap().set_len(0).unwrap();
    let mut reloaded = manager(&fs);
    reloaded.truncate_and_reload(0, 2).unwrap();
    assert_eq!(reloaded.take_corrupt_snapshots().len(), 1);
    assert!(reloaded.is_empty());
    assert_eq!((reloaded.map_end_offset(), reloaded.latest_snapshot_offset()), (0, None));
}

/// `testRemoveStraySnapshotsKeepCleanShutdownSnapshot`, `testTruncateAndReloadRemovesOutOfRangeSnapshots`,
/// `testDeleteSnapshotsBefore`, leftovers of an interrupted write.
#[test]
fn stray_out_of_range_and_old_snapshots_are_deleted() {
    let fs = SimFs::new();
    let mut state = manager(&fs);
    for offset in [0, 5, 7, 10, 12, 15] {
        state.update_map_end_offset(offset);
        state.take_snapshot(true).unwrap();
    }
    let tmp = dir().join("00000000000000000020.snapshot.tmp");
    fs.open(&tmp, OpenMode::CreateNew).unwrap();
    let mut state = manager(&fs);
    assert!(!fs.exists(&tmp).unwrap());
    assert_eq!(state.snapshot_offsets(), [5, 7, 10, 12, 15]);
    // Segments at 0, 5 and 10: 7 and 12 are strays; 15 is above every base (a clean close).
    state.remove_stray_snapshots(&[0, 5, 10]).unwrap();
    assert_eq!(state.snapshot_offsets(), [5, 10, 15]);
    state.truncate_and_reload(5, 12).unwrap();
    assert_eq!(state.snapshot_offsets(), [10]);
    assert_eq!(state.map_end_offset(), 10);
    state.delete_snapshots_before(11).unwrap();
    assert_eq!(state.snapshot_offsets(), Vec::<i64>::new());
    let files: Vec<PathBuf> = fs.list(&dir()).unwrap();
    assert!(files.is_empty(), "{files:?}");
}

/// A snapshot taken unsynced is handed to the next flush; without it, a power loss may lose
/// it, and what survives is either the whole file or nothing valid.
#[test]
fn unsynced_snapshots_are_handed_to_the_flush() {
    let fs = SimFs::new();
    let mut state = manager(&fs);
    for ancestor in dir().ancestors() {
        fs.sync_dir(ancestor).unwrap();
    }
    state.update(1, 0, batch(0, 0, 0));
    state.update_map_end_offset(1);
    state.take_snapshot(false).unwrap();
    let unsynced = state.take_unsynced_snapshots();
    assert_eq!(unsynced, [dir().join("00000000000000000001.snapshot")]);
    assert!(state.take_unsynced_snapshots().is_empty());
    fs.open(&unsynced[0], OpenMode::ReadWrite).unwrap().sync_data().unwrap();
    fs.sync_dir(&dir()).unwrap();
    drop(state);
    fs.crash(3);
    let mut reloaded = manager(&fs);
    reloaded.truncate_and_reload(0, 1).unwrap();
    assert_eq!(reloaded.last_entry(1), Some((0, Some(batch(0, 0, 0)))));
}

/// A data batch through the checks a leader append runs, then recorded.
fn data(
    state: &mut ProducerStateManager,
    producer_id: i64,
    epoch: i16,
    seq: i32,
    offset: i64,
    is_transactional: bool,
) -> Result<(), ValidationError> {
    state.check(producer_id, epoch, seq, seq)?;
    state.check_txn_state(producer_id, offset, is_transactional)?;
    state.update_data(producer_id, epoch, batch(seq, seq, offset), is_transactional);
    state.update_map_end_offset(offset + 1);
    Ok(())
}

/// A COMMIT (or ABORT) marker through the checks, then recorded and its transaction
/// completed.
fn end_txn(
    state: &mut ProducerStateManager,
    producer_id: i64,
    epoch: i16,
    is_abort: bool,
    offset: i64,
    coordinator_epoch: i32,
) -> Result<Option<CompletedTxn>, ValidationError> {
    let marker = TxnMarker {
        producer_id,
        producer_epoch: epoch,
        coordinator_epoch,
        offset,
        timestamp: 5_000 + offset,
        is_abort,
    };
    state.check_end_txn_marker(&marker)?;
    let completed = state.update_end_txn_marker(&marker);
    if let Some(completed) = &completed {
        state.complete_txn(completed);
    }
    state.update_map_end_offset(offset + 1);
    Ok(completed)
}

/// Begin, commit and abort: a transactional batch opens a transaction at its offset, later
/// ones continue it, a marker closes it with a `CompletedTxn` (Kafka's `testSkipEmptyTransactions`
/// without the append batching), and markers of empty transactions complete nothing.
#[test]
fn transactions_begin_at_their_first_batch_and_end_at_a_marker() {
    let mut state = manager(&SimFs::new());
    data(&mut state, 1, 0, 0, 16, true).unwrap();
    data(&mut state, 1, 0, 1, 17, true).unwrap();
    assert_eq!(state.current_txn_first_offset(1), Some(16));
    assert_eq!(state.ongoing_txns(), [(16, 1)]);
    assert_eq!(state.first_unstable_offset(), Some(16));
    let commit = end_txn(&mut state, 1, 0, false, 21, 0).unwrap();
    assert_eq!(
        commit,
        Some(CompletedTxn { producer_id: 1, first_offset: 16, last_offset: 21, is_aborted: false })
    );
    assert_eq!(state.current_txn_first_offset(1), None);
    // Completed but above the high watermark: still unstable.
    assert_eq!((state.first_undecided_offset(), state.first_unstable_offset()), (None, Some(16)));
    state.on_high_watermark_updated(22);
    assert_eq!(state.first_unstable_offset(), None);
    // Empty transactions: markers with nothing open complete nothing.
    assert_eq!(end_txn(&mut state, 1, 0, false, 22, 0).unwrap(), None);
    assert_eq!(end_txn(&mut state, 1, 0, true, 23, 0).unwrap(), None);
    data(&mut state, 1, 0, 2, 24, true).unwrap();
    let abort = end_txn(&mut state, 1, 0, true, 28, 0).unwrap();
    assert_eq!(
        abort,
        Some(CompletedTxn { producer_id: 1, first_offset: 24, last_offset: 28, is_aborted: true })
    );
    data(&mut state, 1, 0, 3, 30, true).unwrap();
    state.on_high_watermark_updated(32);
    assert_eq!(state.first_unstable_offset(), Some(30));
    // Markers do not touch sequences: the next batch follows the last data batch.
    assert_eq!(state.last_entry(1).map(|(_, last)| last.map(|b| b.last_seq)), Some(Some(3)));
}

/// `testNonTransactionalAppendWithOngoingTransaction`: INVALID_TXN_STATE, and nothing changes.
#[test]
fn a_non_transactional_batch_inside_a_transaction_is_invalid_txn_state() {
    let mut state = manager(&SimFs::new());
    data(&mut state, 1, 0, 0, 0, true).unwrap();
    let refused = data(&mut state, 1, 0, 1, 1, false);
    assert_eq!(refused.map_err(|e| e.error_name()), Err("INVALID_TXN_STATE"));
    assert_eq!(state.current_txn_first_offset(1), Some(0));
    // Another producer is not affected, and after the marker the producer may go on
    // without a transaction.
    data(&mut state, 2, 0, 0, 1, false).unwrap();
    end_txn(&mut state, 1, 0, false, 2, 0).unwrap();
    data(&mut state, 1, 0, 1, 3, false).unwrap();
    assert_eq!(state.ongoing_txns(), []);
}

/// `testOldEpochForControlRecord`, `testCoordinatorFencing`, `testControlRecordBumpsProducerEpoch`,
/// `testProducerStateAfterFencingAbortMarker`.
#[test]
fn markers_check_the_producer_and_coordinator_epochs() {
    let mut state = manager(&SimFs::new());
    data(&mut state, 1, 5, 0, 99, true).unwrap();
    assert_eq!(
        end_txn(&mut state, 1, 4, false, 100, 0),
        Err(ValidationError::InvalidProducerEpoch { producer_id: 1, epoch: 4, current_epoch: 5 })
    );
    assert_eq!(state.current_txn_first_offset(1), Some(99), "a refused marker changes nothing");
    end_txn(&mut state, 1, 5, false, 100, 1).unwrap();
    assert_eq!(state.active_producers()[0].coordinator_epoch, 1);
    // The same coordinator epoch and a newer one are allowed; an older one is fenced.
    end_txn(&mut state, 1, 5, false, 101, 1).unwrap();
    end_txn(&mut state, 1, 5, false, 102, 2).unwrap();
    let fenced = end_txn(&mut state, 1, 5, false, 103, 1);
    assert_eq!(fenced.map_err(|e| e.error_code()), Err(52));
    // A fencing ABORT at a bumped epoch ends the transaction and forgets the old batches:
    // the producer starts again at sequence 0 of the new epoch.
    data(&mut state, 1, 5, 1, 104, true).unwrap();
    let abort = end_txn(&mut state, 1, 6, true, 105, 2).unwrap();
    assert_eq!(abort.map(|txn| (txn.first_offset, txn.is_aborted)), Some((104, true)));
    assert_eq!(state.last_entry(1), Some((6, None)));
    assert_eq!(
        state.check(1, 6, 2, 2),
        Err(ValidationError::OutOfOrderSequence { producer_id: 1, expected: 0, found: 2 })
    );
    data(&mut state, 1, 6, 0, 106, false).unwrap();
}

/// `testAppendTxnMarkerWithNoProducerState`: a marker is the producer's only trace; it
/// still fences older epochs.
#[test]
fn a_marker_of_an_unknown_producer_is_accepted_and_fences() {
    let mut state = manager(&SimFs::new());
    assert_eq!(end_txn(&mut state, 1, 2, false, 27, 3).unwrap(), None);
    assert_eq!(
        state.active_producers(),
        [ActiveProducer {
            producer_id: 1,
            producer_epoch: 2,
            last_sequence: -1,
            last_timestamp: 5_027,
            coordinator_epoch: 3,
            current_txn_start_offset: -1,
        }]
    );
    assert_eq!(
        state.check(1, 0, 0, 0),
        Err(ValidationError::InvalidProducerEpoch { producer_id: 1, epoch: 0, current_epoch: 2 })
    );
    assert_eq!(
        state.check(1, 2, 17, 17),
        Err(ValidationError::OutOfOrderSequence { producer_id: 1, expected: 0, found: 17 })
    );
    data(&mut state, 1, 2, 0, 39, false).unwrap();
}

/// `testFirstUnstableOffset` and `testLastStableOffsetCompletedTxn`: the first unstable
/// offset waits for the high watermark to pass each marker; an aborted transaction's index
/// entry gets the first offset of the earliest other open transaction.
#[test]
fn first_unstable_and_last_stable_offsets_of_completed_transactions() {
    let mut state = manager(&SimFs::new());
    assert_eq!(state.first_undecided_offset(), None);
    data(&mut state, 1, 5, 0, 99, true).unwrap();
    data(&mut state, 2, 5, 0, 105, true).unwrap();
    assert_eq!(
        (state.first_undecided_offset(), state.first_unstable_offset()),
        (Some(99), Some(99))
    );
    end_txn(&mut state, 1, 5, false, 109, 0).unwrap();
    assert_eq!(
        (state.first_undecided_offset(), state.first_unstable_offset()),
        (Some(105), Some(99))
    );
    state.on_high_watermark_updated(100);
    assert_eq!(state.first_unstable_offset(), Some(99));
    state.on_high_watermark_updated(110);
    assert_eq!(state.first_unstable_offset(), Some(105));
    end_txn(&mut state, 2, 5, true, 112, 0).unwrap();
    assert_eq!((state.first_undecided_offset(), state.first_unstable_offset()), (None, Some(105)));
    state.on_high_watermark_updated(113);
    assert_eq!(state.first_unstable_offset(), None);

    let mut state = manager(&SimFs::new());
    let (start1, start2, start3) = (992_342, 992_367, 992_399);
    data(&mut state, 1, 0, 0, start1, true).unwrap();
    data(&mut state, 2, 0, 0, start2, true).unwrap();
    data(&mut state, 3, 0, 0, start3, true).unwrap();
    let txn1 = CompletedTxn {
        producer_id: 1,
        first_offset: start1,
        last_offset: start3 + 15,
        is_aborted: false,
    };
    assert_eq!(state.last_stable_offset_of(&txn1), start2);
    state.complete_txn(&txn1);
    state.on_high_watermark_updated(txn1.last_offset + 1);
    assert_eq!(state.first_unstable_offset(), Some(start2));
    let txn3 = CompletedTxn {
        producer_id: 3,
        first_offset: start3,
        last_offset: txn1.last_offset + 20,
        is_aborted: false,
    };
    assert_eq!(state.last_stable_offset_of(&txn3), start2);
    state.complete_txn(&txn3);
    state.on_high_watermark_updated(txn3.last_offset + 1);
    assert_eq!(state.first_unstable_offset(), Some(start2));
    let txn2 = CompletedTxn {
        producer_id: 2,
        first_offset: start2,
        last_offset: txn3.last_offset + 78,
        is_aborted: false,
    };
    assert_eq!(state.last_stable_offset_of(&txn2), txn2.last_offset + 1);
    state.complete_txn(&txn2);
    state.on_high_watermark_updated(txn2.last_offset + 1);
    assert_eq!(state.first_unstable_offset(), None);
}

/// `testRecoverFromSnapshotUnfinishedTransaction`, `...FinishedTransaction`,
/// `...EmptyTransaction`, `testCoordinatorFencedAfterReload`, `testFirstUnstableOffsetAfterTruncation`:
/// a snapshot keeps the open transaction and the coordinator epoch, byte for byte in Kafka's
/// fields.
#[test]
fn snapshots_keep_open_transactions_and_coordinator_epochs() {
    let fs = SimFs::new();
    let mut state = manager(&fs);
    data(&mut state, 1, 0, 0, 0, true).unwrap();
    data(&mut state, 1, 0, 1, 1, true).unwrap();
    data(&mut state, 2, 0, 0, 2, true).unwrap();
    end_txn(&mut state, 2, 0, true, 3, 7).unwrap();
    assert!(state.take_snapshot(true).unwrap());
    let bytes = crate::io::read_all(
        fs.open(&dir().join("00000000000000000004.snapshot"), OpenMode::Read).unwrap().as_ref(),
    )
    .unwrap();
    let entries = decode_producer_snapshot(&bytes).unwrap();
    assert_eq!(
        entries
            .iter()
            .map(|e| (e.producer_id, e.coordinator_epoch, e.current_txn_first_offset))
            .collect::<Vec<_>>(),
        [(1, -1, 0), (2, 7, -1)]
    );
    assert_eq!(entries[1].timestamp, 5_003, "the marker's timestamp is the producer's last");
    let mut reloaded = manager(&fs);
    reloaded.truncate_and_reload(0, 4).unwrap();
    assert_eq!(reloaded.current_txn_first_offset(1), Some(0));
    assert_eq!(reloaded.ongoing_txns(), [(0, 1)]);
    assert_eq!(reloaded.first_unstable_offset(), Some(0));
    data(&mut reloaded, 1, 0, 2, 4, true).unwrap();
    assert_eq!(reloaded.current_txn_first_offset(1), Some(0), "the same transaction goes on");
    let fenced = end_txn(&mut reloaded, 2, 0, false, 5, 6);
    assert_eq!(fenced.map_err(|e| e.error_name()), Err("TRANSACTION_COORDINATOR_FENCED"));
    // A truncation back below the commit reopens the transaction from the older snapshot.
    end_txn(&mut reloaded, 1, 0, false, 5, 0).unwrap();
    reloaded.on_high_watermark_updated(6);
    assert_eq!(reloaded.first_unstable_offset(), None);
    assert!(reloaded.take_snapshot(true).unwrap());
    reloaded.truncate_and_reload(0, 5).unwrap();
    assert_eq!(reloaded.ongoing_txns(), [(0, 1)]);
    assert_eq!(reloaded.first_unstable_offset(), Some(0));
}

#[test]
fn truncate_fully_deletes_every_snapshot() {
    let fs = SimFs::new();
    let mut state = manager(&fs);
    state.update_data(1, 0, batch(0, 0, 0), true);
    state.update_map_end_offset(1);
    state.take_snapshot(true).unwrap();
    state.truncate_fully_and_start_at(30).unwrap();
    assert!(state.is_empty());
    assert_eq!((state.ongoing_txns(), state.first_unstable_offset()), (vec![], None));
    assert_eq!((state.map_end_offset(), state.latest_snapshot_offset()), (30, None));
    assert!(fs.list(&dir()).unwrap().is_empty());
}
