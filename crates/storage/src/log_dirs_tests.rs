//! Moving partitions between log directories (`LogManager::alter_log_dir`) on the simulated file
//! system: a move while appends continue, a crash after each file-system step of a move and its
//! swap, and a seeded campaign of moves, appends, crashes and reopens. Long runs:
//! `SEED=<n> ITERATIONS=<n> cargo test --release -p seglog-storage log_dir_moves_fuzz`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::names::{DirState, PartitionDir};
use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};

use crate::config::{BrokerLogConfig, LogConfig};
use crate::dirs::checkpoint::{OffsetCheckpointFile, RECOVERY_POINT_CHECKPOINT_FILE};
use crate::error::Error;
use crate::io::{FaultKind, FaultPlan, Fs, SimFs};
use crate::log::partition_log::{Isolation, TopicPartition};
use crate::log::validator::AppendOrigin;
use crate::manager::{LogManager, ManualClock, OpenReport};
use crate::testing::Rng;

const DIR_A: &str = "/data/a";
const DIR_B: &str = "/data/b";

fn config(replica_fetch_max_bytes: u32) -> BrokerLogConfig {
    BrokerLogConfig {
        log_dirs: vec![PathBuf::from(DIR_A), PathBuf::from(DIR_B)],
        default_log_config: LogConfig {
            segment_bytes: 1024,
            segment_index_bytes: 1024,
            index_interval_bytes: 128,
            ..LogConfig::default()
        },
        replica_fetch_max_bytes,
        ..BrokerLogConfig::default()
    }
}

/// A manager over both directories; a move copies a few batches per tick.
fn open(fs: &SimFs) -> (LogManager, OpenReport) {
    open_copying(fs, 300)
}

/// [`open`] copying `replica_fetch_max_bytes` per tick.
fn open_copying(fs: &SimFs, replica_fetch_max_bytes: u32) -> (LogManager, OpenReport) {
    let config = config(replica_fetch_max_bytes);
    LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(1_000)), config).unwrap()
}

fn tp() -> TopicPartition {
    TopicPartition { topic: "moving".into(), partition: 0 }
}

/// The value of the record at `offset`: every test appends offset `n` as `r<n>`.
fn value(offset: i64) -> Vec<u8> {
    format!("r{offset}").into_bytes()
}

/// Appends `n_records` records at the log end with `leader_epoch`; returns the new log end.
fn append(manager: &LogManager, n_records: i64, leader_epoch: i32) -> Result<i64, Error> {
    append_values(manager, n_records, leader_epoch, value)
}

/// [`append`] with the value of each offset from `make_value`.
fn append_values(
    manager: &LogManager,
    n_records: i64,
    leader_epoch: i32,
    make_value: impl Fn(i64) -> Vec<u8>,
) -> Result<i64, Error> {
    let log = manager.get_log(&tp())?;
    let first = log.log_end_offset()?;
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for offset in first..first + n_records {
        builder.push(1_000 + offset, None, Some(&make_value(offset)), &[]).unwrap();
    }
    let info =
        log.append_as_leader(&builder.build().unwrap(), leader_epoch, AppendOrigin::Client, 1_000)?;
    assert_eq!(info.first_offset, first);
    Ok(info.last_offset + 1)
}

/// Checks that the partition holds `r<n>` at every offset `n` from 0 to its end, contiguously,
/// and that its end is at least `durable_end`. Returns the end.
fn check_records(manager: &LogManager, durable_end: i64, context: &str) -> i64 {
    check_values(manager, durable_end, context, value)
}

/// [`check_records`] with the expected value of each offset from `expected`.
fn check_values(
    manager: &LogManager,
    durable_end: i64,
    context: &str,
    expected: impl Fn(i64) -> Vec<u8>,
) -> i64 {
    let log = manager.get_log(&tp()).unwrap_or_else(|e| panic!("{context}: partition gone: {e}"));
    let end = log.log_end_offset().unwrap();
    assert!(end >= durable_end, "{context}: lost acknowledged records: end {end} < {durable_end}");
    let mut next = log.log_start_offset().unwrap();
    assert_eq!(next, 0, "{context}: log start");
    while next < end {
        let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
        assert!(!fetch.records.is_empty(), "{context}: unreadable at {next} (end {end})");
        for item in Batches::new(&fetch.records) {
            let batch = item.unwrap().batch;
            for record in &batch.records(DecodeLimits::default()).unwrap() {
                let record = record.unwrap();
                if record.offset < next {
                    continue;
                }
                assert_eq!(record.offset, next, "{context}: offsets are contiguous");
                assert_eq!(
                    record.value.map(<[u8]>::to_vec),
                    Some(expected(record.offset)),
                    "{context}: offset {} holds what was appended",
                    record.offset
                );
                next += 1;
            }
        }
    }
    end
}

/// The directories of the partition in both log directories, with their states.
fn partition_dirs(fs: &SimFs) -> Vec<(PathBuf, DirState)> {
    let mut found = Vec::new();
    for dir in [DIR_A, DIR_B] {
        for entry in fs.list(Path::new(dir)).unwrap() {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            if let Ok(parsed) = PartitionDir::parse(&name)
                && parsed.topic == "moving"
            {
                found.push((entry, parsed.state));
            }
        }
    }
    found
}

fn is_moving(manager: &LogManager) -> bool {
    manager.describe_log_dirs(None).iter().flat_map(|d| &d.replicas).any(|r| r.is_future)
}

/// Ticks until no move is left, at most `max_ticks` times; returns whether that happened.
fn finish_moves(manager: &LogManager, max_ticks: usize) -> bool {
    for _ in 0..max_ticks {
        if !is_moving(manager) {
            return true;
        }
        manager.tick(1_000);
    }
    !is_moving(manager)
}

#[test]
fn a_move_while_appends_continue_keeps_every_record_in_the_new_dir_only() {
    let fs = SimFs::new();
    let (manager, _) = open(&fs);
    manager.create_topic("moving", 1, BTreeMap::new()).unwrap();
    assert!(manager.get_log(&tp()).unwrap().dir().starts_with(DIR_A));
    let mut end = 0;
    for _ in 0..30 {
        end = append(&manager, 5, 0).unwrap();
    }
    manager.alter_log_dir(&tp(), Path::new(DIR_B)).unwrap();
    // Asking again, or for the directory the partition is in while it moves, is answered at
    // once; an unknown directory or partition is an error.
    manager.alter_log_dir(&tp(), Path::new(DIR_B)).unwrap();
    assert!(matches!(
        manager.alter_log_dir(&tp(), Path::new("/data/c")),
        Err(Error::LogDirNotFound { .. })
    ));
    let unknown = TopicPartition { topic: "nope".into(), partition: 0 };
    assert!(matches!(
        manager.alter_log_dir(&unknown, Path::new(DIR_B)),
        Err(Error::UnknownTopicOrPartition { .. })
    ));
    let mut saw_lag = false;
    let mut ticks = 0;
    let mut epoch = 0;
    while is_moving(&manager) {
        ticks += 1;
        assert!(ticks < 1_000, "the move finishes");
        if ticks == 5 {
            epoch = 3; // a new leader epoch mid-move is copied too
        }
        end = append(&manager, 2, epoch).unwrap();
        let described = manager.describe_log_dirs(None);
        let future = described
            .iter()
            .find(|d| d.path == Path::new(DIR_B))
            .and_then(|d| d.replicas.iter().find(|r| r.is_future));
        if let Some(future) = future {
            let current_end = manager.get_log(&tp()).unwrap().log_end_offset().unwrap();
            assert!(future.offset_lag >= 0 && future.offset_lag <= current_end);
            saw_lag |= future.offset_lag > 0;
        }
        manager.tick(1_000);
    }
    assert!(saw_lag, "the future log lagged while it copied");
    assert!(ticks > 3, "the copy is bounded per tick ({ticks} ticks)");
    let log = manager.get_log(&tp()).unwrap();
    assert!(log.dir().starts_with(DIR_B), "now in b: {}", log.dir().display());
    assert_eq!(check_records(&manager, end, "after the move"), end);
    assert_eq!(log.latest_leader_epoch().unwrap(), Some(3));
    assert_eq!(log.leader_epochs().unwrap().first(), Some(&(0, 0)));
    // Appends go on through the same handle.
    end = append(&manager, 3, 3).unwrap();
    manager.tick(1_000); // removes the old directory
    let dirs = partition_dirs(&fs);
    assert_eq!(dirs.len(), 1, "only the new directory is left: {dirs:?}");
    assert!(dirs[0].0.starts_with(DIR_B) && dirs[0].1 == DirState::Live, "{dirs:?}");
    let described = manager.describe_log_dirs(None);
    assert!(described[0].replicas.is_empty());
    assert_eq!(described[1].replicas.len(), 1);
    assert_eq!(described[1].replicas[0].size_bytes, log.size_bytes().unwrap());
    // The target's checkpoints hold the moved partition.
    manager.checkpoint().unwrap();
    let recovery_points =
        OffsetCheckpointFile::in_dir(Path::new(DIR_B), RECOVERY_POINT_CHECKPOINT_FILE)
            .read(&fs)
            .unwrap();
    assert!(recovery_points.contains_key(&("moving".to_owned(), 0)), "{recovery_points:?}");
    let in_a = OffsetCheckpointFile::in_dir(Path::new(DIR_A), RECOVERY_POINT_CHECKPOINT_FILE)
        .read(&fs)
        .unwrap();
    assert!(!in_a.contains_key(&("moving".to_owned(), 0)), "{in_a:?}");
    manager.shutdown().unwrap();
    drop((log, manager));
    fs.crash(7);
    let (manager, report) = open(&fs);
    assert!(report.resumed_moves.is_empty() && report.finished_moves.is_empty());
    assert!(manager.get_log(&tp()).unwrap().dir().starts_with(DIR_B));
    assert_eq!(check_records(&manager, end, "after a clean restart"), end);
    // And back again.
    manager.alter_log_dir(&tp(), Path::new(DIR_A)).unwrap();
    assert!(finish_moves(&manager, 1_000));
    assert!(manager.get_log(&tp()).unwrap().dir().starts_with(DIR_A));
    assert_eq!(check_records(&manager, end, "moved back"), end);
}

#[test]
fn moving_to_the_current_dir_cancels_a_move() {
    let fs = SimFs::new();
    let (manager, _) = open(&fs);
    manager.create_topic("moving", 1, BTreeMap::new()).unwrap();
    for _ in 0..30 {
        append(&manager, 5, 0).unwrap();
    }
    manager.alter_log_dir(&tp(), Path::new(DIR_B)).unwrap();
    manager.tick(1_000);
    assert!(is_moving(&manager));
    manager.alter_log_dir(&tp(), Path::new(DIR_A)).unwrap();
    assert!(!is_moving(&manager));
    manager.tick(1_000);
    let dirs = partition_dirs(&fs);
    assert_eq!(dirs.len(), 1, "the future directory is removed: {dirs:?}");
    assert!(dirs[0].0.starts_with(DIR_A));
    assert_eq!(check_records(&manager, 150, "cancelled"), 150);
}

#[test]
fn deleting_a_topic_mid_move_removes_both_logs() {
    let fs = SimFs::new();
    let (manager, _) = open(&fs);
    manager.create_topic("moving", 1, BTreeMap::new()).unwrap();
    for _ in 0..30 {
        append(&manager, 5, 0).unwrap();
    }
    manager.alter_log_dir(&tp(), Path::new(DIR_B)).unwrap();
    manager.tick(1_000);
    manager.delete_topic("moving").unwrap();
    manager.tick(1_000);
    assert!(partition_dirs(&fs).is_empty(), "{:?}", partition_dirs(&fs));
    drop(manager);
    fs.crash(1);
    let (manager, _) = open(&fs);
    assert!(manager.partitions().is_empty());
}

/// Runs one move from a to b with appends between the ticks (each flushed, acknowledged as
/// durable, with `flush_appends`), under `plan`; returns the durable end reached. Stops at the
/// first failed call.
fn run_move(fs: &SimFs, manager: &LogManager, plan: FaultPlan, flush_appends: bool) -> i64 {
    let mut durable_end = manager.get_log(&tp()).unwrap().log_end_offset().unwrap();
    fs.set_fault_plan(plan);
    let outcome = (|| -> Result<(), Error> {
        manager.alter_log_dir(&tp(), Path::new(DIR_B))?;
        for _ in 0..200 {
            if !is_moving(manager) {
                break;
            }
            append(manager, 3, 0)?;
            if flush_appends {
                durable_end = manager.get_log(&tp())?.flush(1_000)?;
            }
            manager.tick(1_000);
            if !manager.offline_dirs().is_empty() {
                break;
            }
        }
        // One more tick removes the old directory.
        manager.tick(1_000);
        Ok(())
    })();
    fs.set_fault_plan(FaultPlan::None);
    let _ = outcome;
    durable_end
}

#[test]
fn a_crash_after_each_step_of_a_move_loses_nothing_and_keeps_one_live_dir() {
    // How many file-system calls a whole move takes, without faults.
    let n_ops = {
        let fs = SimFs::new();
        let (manager, _) = open(&fs);
        manager.create_topic("moving", 1, BTreeMap::new()).unwrap();
        for _ in 0..12 {
            append(&manager, 5, 0).unwrap();
        }
        manager.get_log(&tp()).unwrap().flush(1_000).unwrap();
        let before = fs.op_count();
        run_move(&fs, &manager, FaultPlan::None, true);
        assert!(manager.get_log(&tp()).unwrap().dir().starts_with(DIR_B));
        fs.op_count() - before
    };
    assert!(n_ops > 50, "{n_ops} ops");
    let (mut resumed, mut finished) = (0, 0);
    // Unflushed appends let a crash take a tail from the current log that the copy holds.
    for (step, flush_appends) in (0..n_ops).flat_map(|step| [(step, true), (step, false)]) {
        let context = format!("crash after op {step} of about {n_ops}, flushes {flush_appends}");
        let fs = SimFs::new();
        let (manager, _) = open(&fs);
        manager.create_topic("moving", 1, BTreeMap::new()).unwrap();
        for _ in 0..12 {
            append(&manager, 5, 0).unwrap();
        }
        manager.get_log(&tp()).unwrap().flush(1_000).unwrap();
        let plan = FaultPlan::FailNth { n: step + 1, kind: FaultKind::Eio };
        let durable_end = run_move(&fs, &manager, plan, flush_appends);
        drop(manager);
        fs.crash(step);
        let (manager, report) = open(&fs);
        resumed += usize::from(!report.resumed_moves.is_empty());
        finished += usize::from(!report.finished_moves.is_empty());
        let dirs = partition_dirs(&fs);
        let live: Vec<_> = dirs.iter().filter(|(_, state)| *state == DirState::Live).collect();
        assert_eq!(live.len(), 1, "{context}: exactly one live directory: {dirs:?}");
        let end = check_records(&manager, durable_end, &context);
        // New records (with other values) at the offsets a crash took, before the move resumes:
        // the copy must not keep what it had of the lost tail.
        let rewritten = |offset: i64| format!("x{offset}").into_bytes();
        let expected = |offset: i64| if offset < end { value(offset) } else { rewritten(offset) };
        let end = append_values(&manager, 4, 0, rewritten).unwrap();
        // An unfinished move resumes and completes; the partition ends in b, intact.
        if is_moving(&manager) {
            assert!(finish_moves(&manager, 1_000), "{context}: the resumed move finishes");
            assert!(manager.get_log(&tp()).unwrap().dir().starts_with(DIR_B), "{context}");
        }
        assert_eq!(
            check_values(&manager, end, &context, expected),
            end,
            "{context}: after the move"
        );
        manager.tick(1_000);
        let dirs = partition_dirs(&fs);
        assert_eq!(dirs.len(), 1, "{context}: one directory in the end: {dirs:?}");
    }
    assert!(resumed > 0, "some crash left a move to resume");
    assert!(finished > 0, "some crash fell between the swap's two renames");
}

/// What the campaign's moves copy per tick: enough to finish some moves between crashes.
const FUZZ_COPY_BYTES: u32 = 2_000;

/// One seed of the campaign: moves back and forth, appends with and without flushes, ticks,
/// power losses and reopens; after every reopen every flushed record is there, and nothing else.
/// Values carry the number of crashes so far, so that a copy that kept a tail the current log
/// lost in a crash (and then rewrote) is caught. Returns how many swaps happened and how many
/// reopens resumed a move.
fn moves_fuzz(seed: u64, steps: usize) -> (usize, usize) {
    let mut rng = Rng(seed);
    let fs = SimFs::new();
    let (mut manager, _) = open_copying(&fs, FUZZ_COPY_BYTES);
    manager.create_topic("moving", 1, BTreeMap::new()).unwrap();
    let mut model: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    let mut generation = 0u64;
    let mut durable_end = 0;
    let mut end = 0;
    let mut n_moves = 0;
    let (mut n_swaps, mut n_resumed) = (0, 0);
    for step in 0..steps {
        let context = format!(
            "seed {seed} step {step}; reproduce: SEED={seed} ITERATIONS=1 cargo test -p seglog-storage log_dir_moves_fuzz"
        );
        let expected = expected_of;
        match rng.below(100) {
            0..=34 => {
                let n_records = 1 + rng.below(6) as i64;
                let make_value = |offset: i64| format!("g{generation}-r{offset}").into_bytes();
                for offset in end..end + n_records {
                    model.insert(offset, make_value(offset));
                }
                end = append_values(&manager, n_records, 0, make_value).unwrap();
            }
            35..=44 => durable_end = manager.get_log(&tp()).unwrap().flush(1_000).unwrap(),
            45..=91 => {
                let before = manager.get_log(&tp()).unwrap().dir();
                manager.tick(1_000);
                if manager.get_log(&tp()).unwrap().dir().parent() != before.parent() {
                    n_swaps += 1;
                    let swapped_end = check_values(&manager, end, &context, expected(&model));
                    assert_eq!(swapped_end, end, "{context}: the swap keeps every record");
                }
            }
            92..=93 => {
                let dir = if rng.below(2) == 0 { DIR_A } else { DIR_B };
                manager.alter_log_dir(&tp(), Path::new(dir)).unwrap();
                n_moves += 1;
            }
            94..=96 => {
                manager.shutdown().unwrap();
                drop(manager);
                let report;
                (manager, report) = open_copying(&fs, FUZZ_COPY_BYTES);
                n_resumed += usize::from(!report.resumed_moves.is_empty());
                durable_end = end;
                let reopened_end = check_values(&manager, durable_end, &context, expected(&model));
                assert_eq!(reopened_end, end, "{context}");
            }
            _ => {
                drop(manager);
                fs.crash(rng.next_u64());
                generation += 1;
                let report;
                (manager, report) = open_copying(&fs, FUZZ_COPY_BYTES);
                n_resumed += usize::from(!report.resumed_moves.is_empty());
                end = check_values(&manager, durable_end, &context, expected(&model));
                model.retain(|offset, _| *offset < end);
                let live = partition_dirs(&fs)
                    .into_iter()
                    .filter(|(_, state)| *state == DirState::Live)
                    .count();
                assert_eq!(live, 1, "{context}: one live directory");
            }
        }
    }
    assert!(n_moves > 0, "seed {seed}: some moves");
    assert!(finish_moves(&manager, 10_000), "seed {seed}: moves finish");
    let final_end =
        check_values(&manager, durable_end, &format!("seed {seed} end"), expected_of(&model));
    assert_eq!(final_end, end, "seed {seed}");
    (n_swaps, n_resumed)
}

fn expected_of(model: &BTreeMap<i64, Vec<u8>>) -> impl Fn(i64) -> Vec<u8> + use<> {
    let model = model.clone();
    move |offset| model.get(&offset).cloned().unwrap_or_default()
}

#[test]
fn log_dir_moves_fuzz() {
    let seeds: Vec<u64> = match std::env::var("SEED") {
        Ok(seed) => vec![seed.parse().unwrap()],
        Err(_) => (1..=8).collect(),
    };
    let iterations: usize =
        std::env::var("ITERATIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(1);
    let (mut n_swaps, mut n_resumed) = (0, 0);
    for seed in seeds {
        for iteration in 0..iterations as u64 {
            let seed = seed.wrapping_add(iteration.wrapping_mul(0x9E37_79B9));
            eprintln!("log_dir_moves_fuzz seed {seed}");
            let (swaps, resumed) = moves_fuzz(seed, 600);
            n_swaps += swaps;
            n_resumed += resumed;
        }
    }
    eprintln!("log_dir_moves_fuzz: {n_swaps} swaps, {n_resumed} reopens resumed a move");
    if std::env::var_os("SEED").is_none() {
        assert!(n_swaps > 0 && n_resumed > 0, "{n_swaps} swaps, {n_resumed} resumed");
    }
}

#[test]
fn describe_reports_space_sizes_and_offline_dirs() {
    let fs = SimFs::new();
    fs.set_capacity_bytes(Some(50_000_000));
    let (manager, _) = open(&fs);
    manager.create_topic("moving", 1, BTreeMap::new()).unwrap();
    manager.create_topic("other", 1, BTreeMap::new()).unwrap();
    append(&manager, 10, 0).unwrap();
    let described = manager.describe_log_dirs(None);
    assert_eq!(described.len(), 2);
    let a = &described[0];
    assert_eq!(a.path, Path::new(DIR_A));
    let space = a.space.unwrap();
    assert_eq!(space.total_bytes, 50_000_000);
    assert_eq!(space.usable_bytes, 50_000_000 - fs.used_bytes());
    assert_eq!(a.replicas.len(), 1);
    let replica = &a.replicas[0];
    assert_eq!(replica.topic_partition, tp());
    assert!(!replica.is_future && replica.offset_lag == 0);
    let log_bytes: u64 = fs
        .list(&manager.get_log(&tp()).unwrap().dir())
        .unwrap()
        .iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .map(|path| fs.open(path, crate::io::OpenMode::Read).unwrap().len().unwrap())
        .sum();
    assert_eq!(replica.size_bytes, log_bytes, "the size is the segments' bytes");
    assert!(log_bytes > 0);
    // A filter that names nothing in a directory leaves it listed, empty.
    let wanted = [tp()].into_iter().collect();
    let described = manager.describe_log_dirs(Some(&wanted));
    assert_eq!(described[1].replicas.len(), 0);
    // Directory b fails: it is listed as offline, and nothing moves there.
    let other = TopicPartition { topic: "other".into(), partition: 0 };
    fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
    let log = manager.get_log(&other).unwrap();
    let mut builder = RecordBatchBuilder::new(Compression::None);
    builder.push(0, None, Some(b"x"), &[]).unwrap();
    assert!(log.append_as_leader(&builder.build().unwrap(), 0, AppendOrigin::Client, 0).is_err());
    fs.set_fault_plan(FaultPlan::None);
    let described = manager.describe_log_dirs(None);
    assert!(matches!(described[1].error, Some(Error::Offline { .. })), "{:?}", described[1]);
    assert!(described[1].replicas.is_empty() && described[1].space.is_none());
    assert!(described[0].error.is_none());
    assert!(matches!(manager.alter_log_dir(&tp(), Path::new(DIR_B)), Err(Error::Offline { .. })));
}

#[test]
fn a_moved_partition_keeps_its_log_start_offset_through_a_crash() {
    let fs = SimFs::new();
    let (manager, _) = open(&fs);
    manager.create_topic("moving", 1, BTreeMap::new()).unwrap();
    let mut end = 0;
    for _ in 0..20 {
        end = append(&manager, 5, 0).unwrap();
    }
    let log = manager.get_log(&tp()).unwrap();
    log.update_high_watermark(end).unwrap();
    // DeleteRecords in the middle of a batch, before and during the move.
    assert_eq!(log.maybe_increment_log_start_offset(7).unwrap(), 7);
    manager.alter_log_dir(&tp(), Path::new(DIR_B)).unwrap();
    manager.tick(1_000);
    assert_eq!(log.maybe_increment_log_start_offset(23).unwrap(), 23);
    assert!(finish_moves(&manager, 1_000));
    assert!(log.dir().starts_with(DIR_B));
    assert_eq!(log.log_start_offset().unwrap(), 23);
    assert_eq!(log.high_watermark().unwrap(), end);
    let first = log.read(23, 1 << 20, Isolation::LogEnd, true).unwrap();
    let batch = Batches::new(&first.records).next().unwrap().unwrap().batch;
    assert!(batch.base_offset(DecodeLimits::default()).unwrap() <= 23);
    assert!(matches!(
        log.read(22, 1 << 20, Isolation::LogEnd, true),
        Err(Error::OffsetOutOfRange { .. })
    ));
    log.flush(1_000).unwrap();
    drop((log, manager));
    fs.crash(11);
    let (manager, _) = open(&fs);
    let log = manager.get_log(&tp()).unwrap();
    assert!(log.dir().starts_with(DIR_B));
    assert_eq!(log.log_start_offset().unwrap(), 23, "the target's checkpoint has the log start");
    assert_eq!(log.log_end_offset().unwrap(), end);
}

#[test]
fn a_tick_copies_at_most_replica_fetch_response_max_bytes_over_all_moves() {
    let fs = SimFs::new();
    let config = BrokerLogConfig { replica_fetch_response_max_bytes: 300, ..config(300) };
    let clock = Arc::new(ManualClock::new(1_000));
    let (manager, _) = LogManager::open(Arc::new(fs.clone()), clock, config).unwrap();
    manager.create_topic("two", 2, BTreeMap::new()).unwrap();
    let tps = [0, 1].map(|partition| TopicPartition { topic: "two".into(), partition });
    for tp in &tps {
        let log = manager.get_log(tp).unwrap();
        for offset in 0..100 {
            let mut builder = RecordBatchBuilder::new(Compression::None);
            builder.push(1_000, None, Some(&value(offset)), &[]).unwrap();
            log.append_as_leader(&builder.build().unwrap(), 0, AppendOrigin::Client, 1_000)
                .unwrap();
        }
        let dir = if log.dir().starts_with(DIR_A) { DIR_B } else { DIR_A };
        manager.alter_log_dir(tp, Path::new(dir)).unwrap();
    }
    let future_sizes = |manager: &LogManager| -> Vec<u64> {
        let described = manager.describe_log_dirs(None);
        tps.iter()
            .map(|tp| {
                described
                    .iter()
                    .flat_map(|d| &d.replicas)
                    .find(|r| r.is_future && r.topic_partition == *tp)
                    .map_or(u64::MAX, |r| r.size_bytes)
            })
            .collect()
    };
    manager.tick(1_000);
    let sizes = future_sizes(&manager);
    assert!(sizes[0] > 0 && sizes[0] < 1_000, "the first move copied one step: {sizes:?}");
    assert_eq!(sizes[1], 0, "the second waits for the next tick: {sizes:?}");
    assert!(finish_moves(&manager, 1_000), "both moves finish");
    for tp in &tps {
        let log = manager.get_log(tp).unwrap();
        assert_eq!(log.log_end_offset().unwrap(), 100);
    }
}
