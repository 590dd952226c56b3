//! Loading the logs a lazy open left unloaded (`BrokerLogConfig::load_lazily`): in the
//! background with `num.recovery.threads.per.data.dir` threads per directory (Kafka's
//! `loadLogs` pools), while each log also loads at its first use.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::LogManager;
use crate::log::load::LoadReport;
use crate::log::partition_log::{PartitionLog, TopicPartition};

/// What [`LogManager::load_unloaded`] did.
#[derive(Debug, Default)]
pub struct LazyLoadReport {
    /// The logs it loaded, with what their loader did (a log a client reached first was loaded
    /// by that call, and is not here).
    pub partitions: BTreeMap<TopicPartition, LoadReport>,
    /// The logs whose load failed, with the error: each is offline, as is its directory when
    /// the error was an I/O one.
    pub failed: Vec<(TopicPartition, String)>,
    /// The threads it ran.
    pub threads: usize,
    /// How long it took.
    pub elapsed: Duration,
}

impl LogManager {
    /// The partitions whose log is not loaded yet.
    pub fn unloaded_partitions(&self) -> usize {
        self.logs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|(_, log)| !log.is_loaded())
            .count()
    }

    /// Loads every log not loaded yet, `num.recovery.threads.per.data.dir` threads per online
    /// directory; stops early once [`LogManager::shutdown`] has begun (shutdown loads what
    /// still needs recovery itself).
    pub fn load_unloaded(&self) -> LazyLoadReport {
        let started = Instant::now();
        let _loading = self.loading.lock().unwrap_or_else(PoisonError::into_inner);
        let pending: Vec<(usize, TopicPartition, Arc<PartitionLog>)> = self
            .logs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, (_, log))| !log.is_loaded())
            .map(|(tp, (dir_idx, log))| (*dir_idx, tp.clone(), Arc::clone(log)))
            .collect();
        let per_dir = self.config.n_recovery_threads_per_data_dir.max(1) as usize;
        let threads = (per_dir * self.dirs.len().max(1)).min(pending.len());
        let next = AtomicUsize::new(0);
        let loaded = Mutex::new(BTreeMap::new());
        let failed = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    while !self.closing.load(Ordering::SeqCst) {
                        let Some((dir_idx, tp, log)) =
                            pending.get(next.fetch_add(1, Ordering::SeqCst))
                        else {
                            break;
                        };
                        if self.dir_is_offline(*dir_idx) {
                            continue;
                        }
                        match self.observe(*dir_idx, log.load()) {
                            Ok(Some(report)) => {
                                loaded
                                    .lock()
                                    .unwrap_or_else(PoisonError::into_inner)
                                    .insert(tp.clone(), report);
                            }
                            Ok(None) => {}
                            Err(error) => failed
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push((tp.clone(), error.to_string())),
                        }
                    }
                });
            }
        });
        LazyLoadReport {
            partitions: loaded.into_inner().unwrap_or_else(PoisonError::into_inner),
            failed: failed.into_inner().unwrap_or_else(PoisonError::into_inner),
            threads,
            elapsed: started.elapsed(),
        }
    }

    /// Makes this node the leader of every partition, its only replica
    /// ([`PartitionLog::make_leader`]): the high watermark moves to the log end, now for a
    /// loaded log and at load for the others.
    pub fn make_leaders(&self) -> crate::Result<()> {
        let logs: Vec<Arc<PartitionLog>> = self
            .logs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|(_, log)| Arc::clone(log))
            .collect();
        for log in logs {
            if !log.is_offline() {
                log.make_leader()?;
            }
        }
        Ok(())
    }
}
