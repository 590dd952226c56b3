//! A seeded campaign over the whole `LogManager` on the simulated file system: topics with
//! several partitions and durability modes, appends of every codec, flushes, retention,
//! DeleteRecords, topic deletion, clean restarts, power-loss crashes, and injected faults (EIO,
//! ENOSPC, short writes). After every reopen: every record acknowledged as durable is present and
//! intact, nothing appears that was never appended, offsets are contiguous from the log start,
//! and a directory that hit an I/O error acknowledged nothing more.
//! Long runs: `SEED=<n> ITERATIONS=<n> cargo test --release -p seglog-storage manager_sim`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};

use crate::config::{BrokerLogConfig, DurabilityMode, LogConfig};
use crate::error::Error;
use crate::io::{BudgetFs, FaultKind, FaultPlan, Fs, SimFs};
use crate::log::partition_log::{Isolation, TopicPartition};
use crate::log::validator::AppendOrigin;
use crate::manager::{LogManager, ManualClock};
use crate::testing::{Rng, producer_batch};

/// What one partition must hold.
#[derive(Debug, Default, Clone)]
struct PartitionModel {
    /// Every value appended at each offset (rewritten offsets replace earlier values).
    values: BTreeMap<i64, Vec<u8>>,
    log_end_offset: i64,
    /// Offsets below this were acknowledged as durable.
    durable_offset: i64,
    /// An append that failed may still have reached the disk: up to here (values recorded).
    maybe_end_offset: i64,
}

fn config() -> BrokerLogConfig {
    let default_log_config = LogConfig {
        segment_bytes: 2048,
        segment_index_bytes: 1024,
        index_interval_bytes: 128,
        ..LogConfig::default()
    };
    BrokerLogConfig {
        log_dirs: vec![PathBuf::from("/sim/a"), PathBuf::from("/sim/b")],
        default_log_config,
        ..BrokerLogConfig::default()
    }
}

/// Opens the manager on `fs`, through a `BudgetFs` of `open_files_max` descriptors if given
/// (every other seed: 2 to 9 descriptors for up to 4 topics of 3 partitions, each with several
/// segments, so that nearly every call reopens a file), loading partitions at first use when
/// `lazy` (half the seeds: a crash can come before a partition loads, or while some have).
fn open(fs: &SimFs, now_ms: i64, open_files_max: Option<usize>, lazy: bool) -> LogManager {
    let fs: Arc<dyn Fs> = match open_files_max {
        Some(max) => Arc::new(BudgetFs::new(Arc::new(fs.clone()), max)),
        None => Arc::new(fs.clone()),
    };
    let config = BrokerLogConfig { load_lazily: lazy, ..config() };
    LogManager::open(fs, Arc::new(ManualClock::new(now_ms)), config).unwrap().0
}

/// Checks every partition of the model against the reopened manager.
fn check(
    manager: &LogManager,
    model: &mut BTreeMap<TopicPartition, PartitionModel>,
    context: &str,
) {
    for (tp, partition) in model.iter_mut() {
        let log = manager.get_log(tp).unwrap_or_else(|e| panic!("{context}: {tp} is gone: {e}"));
        let end = log.log_end_offset().unwrap();
        assert!(
            end >= partition.durable_offset,
            "{context}: {tp} lost acknowledged records: end {end} < durable {}",
            partition.durable_offset
        );
        let appended_end = partition.log_end_offset.max(partition.maybe_end_offset);
        assert!(
            end <= appended_end,
            "{context}: {tp} grew records nobody appended: end {end} > {appended_end}"
        );
        let start = log.log_start_offset().unwrap();
        let mut next = start;
        while next < end {
            let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
            assert!(!fetch.records.is_empty(), "{context}: {tp} unreadable at {next} (end {end})");
            for item in Batches::new(&fetch.records) {
                let batch = item.unwrap().batch;
                batch.validate().unwrap_or_else(|e| panic!("{context}: {tp}: {e}"));
                for record in &batch.records(DecodeLimits::default()).unwrap() {
                    let record = record.unwrap();
                    if record.offset < next {
                        continue;
                    }
                    assert_eq!(record.offset, next, "{context}: {tp}: offsets are contiguous");
                    assert_eq!(
                        Some(&record.value.unwrap().to_vec()),
                        partition.values.get(&record.offset),
                        "{context}: {tp} offset {} is not what was appended",
                        record.offset
                    );
                    next += 1;
                }
            }
        }
        partition.log_end_offset = end;
        partition.maybe_end_offset = end;
        partition.durable_offset = partition.durable_offset.min(end);
        partition.values.retain(|offset, _| *offset < end);
    }
}

/// One seed; returns how many crash-and-reopen cycles it ran.
#[expect(clippy::too_many_lines, reason = "one match over every operation reads best in one place")]
fn run(seed: u64, steps: usize) -> usize {
    let mut rng = Rng(seed);
    let fs = SimFs::new();
    let mut now_ms = 1_000;
    let open_files_max = (seed % 2 == 1).then(|| 2 + usize::try_from(seed % 8).unwrap_or(0));
    let lazy = seed % 4 >= 2;
    let mut manager = open(&fs, now_ms, open_files_max, lazy);
    let mut model: BTreeMap<TopicPartition, PartitionModel> = BTreeMap::new();
    let mut n_topics = 0;
    let mut crashes = 0;
    for step in 0..steps {
        now_ms += 1 + rng.below(50) as i64;
        let context = format!(
            "seed {seed} step {step}; reproduce: SEED={seed} ITERATIONS=1 cargo test -p seglog-storage manager_sim"
        );
        let tps: Vec<TopicPartition> = model.keys().cloned().collect();
        let op = rng.below(100);
        if std::env::var_os("SIM_TRACE").is_some() {
            let summary: Vec<String> = model
                .iter()
                .map(|(tp, p)| format!("{tp}:{}/{}", p.log_end_offset, p.durable_offset))
                .collect();
            eprintln!("step {step} op {op} {summary:?}");
        }
        match op {
            0..=7 if n_topics < 4 => {
                let topic = format!("t{n_topics}");
                n_topics += 1;
                let durability = DurabilityMode::ALL[rng.below(3) as usize];
                let overrides = BTreeMap::from([(
                    "seglog.durability".to_owned(),
                    durability.name().to_owned(),
                )]);
                let partitions = 1 + rng.below(3) as i32;
                match manager.create_topic(&topic, partitions, overrides) {
                    Ok(created) => {
                        for tp in created {
                            model.insert(tp, PartitionModel::default());
                        }
                    }
                    Err(Error::Offline { .. } | Error::Io { .. }) => {}
                    Err(error) => panic!("{context}: create_topic: {error}"),
                }
            }
            8..=59 if !tps.is_empty() => {
                let tp = &tps[rng.below(tps.len() as u64) as usize];
                let codec = Compression::ALL[rng.below(5) as usize];
                let mut builder = RecordBatchBuilder::new(codec);
                let partition = model.get_mut(tp).unwrap_or_else(|| unreachable!());
                let n = 1 + rng.below(4) as i64;
                let mut values = Vec::new();
                for idx in 0..n {
                    let value = format!(
                        "{tp}-{}-{step}-{}",
                        partition.log_end_offset + idx,
                        "w".repeat(rng.below(120) as usize)
                    )
                    .into_bytes();
                    builder.push(now_ms, Some(b"key"), Some(&value), &[]).unwrap();
                    values.push(value);
                }
                let Ok(log) = manager.get_log(tp) else { continue };
                match log.append_as_leader(
                    &builder.build().unwrap(),
                    0,
                    AppendOrigin::Client,
                    now_ms,
                ) {
                    Ok(info) => {
                        assert_eq!(info.first_offset, partition.log_end_offset, "{context}: {tp}");
                        for (idx, value) in values.into_iter().enumerate() {
                            partition.values.insert(info.first_offset + idx as i64, value);
                        }
                        partition.log_end_offset = info.last_offset + 1;
                        partition.durable_offset =
                            partition.durable_offset.max(info.durable_offset);
                    }
                    Err(Error::Offline { .. }) => {}
                    Err(Error::Io { .. }) => {
                        // Written maybe, acknowledged not: such records may survive at the next
                        // offsets. The directory is offline from now on.
                        for (idx, value) in values.into_iter().enumerate() {
                            partition.values.insert(partition.log_end_offset + idx as i64, value);
                        }
                        partition.maybe_end_offset = partition.log_end_offset + n;
                        let again = log.append_as_leader(
                            &producer_batch([(0, None::<&[u8]>, b"after-error")]),
                            0,
                            AppendOrigin::Client,
                            now_ms,
                        );
                        let offline = matches!(again, Err(Error::Offline { .. }));
                        assert!(offline, "{context}: nothing more is acknowledged: {again:?}");
                    }
                    Err(error) => panic!("{context}: {tp}: {error}"),
                }
            }
            60..=67 if !tps.is_empty() => {
                let tp = &tps[rng.below(tps.len() as u64) as usize];
                if let Ok(log) = manager.get_log(tp)
                    && let Ok(durable) = log.flush(now_ms)
                {
                    let partition = model.get_mut(tp).unwrap_or_else(|| unreachable!());
                    partition.durable_offset = partition.durable_offset.max(durable);
                }
            }
            68..=71 => {
                manager.tick(now_ms);
                for (tp, partition) in &mut model {
                    if let Ok(log) = manager.get_log(tp) {
                        partition.durable_offset =
                            partition.durable_offset.max(log.recovery_point().unwrap_or(0));
                    }
                }
            }
            72..=75 if !tps.is_empty() => {
                // Fault injection on one of the next few operations.
                let kind = [FaultKind::Eio, FaultKind::Enospc, FaultKind::ShortWrite]
                    [rng.below(3) as usize];
                fs.set_fault_plan(FaultPlan::FailNth { n: 1 + rng.below(6), kind });
            }
            76..=84 => {
                fs.set_fault_plan(FaultPlan::None);
                drop(manager);
                fs.crash(rng.next_u64());
                crashes += 1;
                manager = open(&fs, now_ms, open_files_max, lazy);
                if lazy && rng.below(2) == 0 {
                    // A second crash before any partition loaded, after a checkpoint that wrote
                    // the unloaded logs' offsets as they were opened: nothing durable is lost.
                    assert_eq!(manager.unloaded_partitions(), model.len(), "{context}");
                    manager.checkpoint().expect(&context);
                    drop(manager);
                    fs.crash(rng.next_u64());
                    crashes += 1;
                    manager = open(&fs, now_ms, open_files_max, lazy);
                }
                if lazy && rng.below(2) == 0 {
                    let loaded = manager.load_unloaded();
                    assert!(loaded.failed.is_empty(), "{context}: {:?}", loaded.failed);
                }
                check(&manager, &mut model, &context);
            }
            85..=89 => {
                fs.set_fault_plan(FaultPlan::None);
                let clean = manager.shutdown().is_ok() && manager.offline_dirs().is_empty();
                drop(manager);
                manager = open(&fs, now_ms, open_files_max, lazy);
                if clean {
                    // A clean shutdown makes everything durable.
                    for partition in model.values_mut() {
                        partition.durable_offset = partition.log_end_offset;
                    }
                }
                check(&manager, &mut model, &context);
            }
            _ => {}
        }
    }
    fs.set_fault_plan(FaultPlan::None);
    drop(manager);
    fs.crash(rng.next_u64());
    let manager = open(&fs, now_ms, open_files_max, lazy);
    check(
        &manager,
        &mut model,
        &format!(
            "seed {seed} final; reproduce: SEED={seed} ITERATIONS=1 cargo test -p seglog-storage manager_sim"
        ),
    );
    crashes + 1
}

#[test]
fn manager_sim() {
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok());
    let iterations: u64 =
        std::env::var("ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(25);
    let start = seed.unwrap_or(1);
    let mut crash_cycles = 0;
    for seed in start..start + iterations {
        match std::panic::catch_unwind(|| run(seed, 120)) {
            Ok(cycles) => crash_cycles += cycles,
            Err(panic) => {
                eprintln!(
                    "manager_sim failed: SEED={seed} ITERATIONS=1 cargo test -p seglog-storage manager_sim"
                );
                std::panic::resume_unwind(panic);
            }
        }
    }
    println!("manager_sim: {iterations} seeds, {crash_cycles} crash-and-reopen cycles");
}
