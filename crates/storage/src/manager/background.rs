//! Which logs [`LogManager::tick`] visits: those a mutation queued since the last tick and
//! those still waiting for a flush or a delayed deletion, or every log on a retention pass
//! (`PartitionLog`'s `set_background_queue` and `release_background`), and the search for
//! failed logs among them. An idle log costs nothing between retention passes.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use super::LogManager;
use crate::log::partition_log::PartitionLog;

impl LogManager {
    /// How many logs [`LogManager::tick`] has visited so far (every log on a retention pass,
    /// else only those with background work).
    pub fn background_visits(&self) -> u64 {
        self.background_visits.load(Ordering::Relaxed)
    }

    /// The logs this tick visits.
    pub(super) fn logs_to_visit(&self, retention_due: bool) -> Vec<(usize, Arc<PartitionLog>)> {
        let mut background = self.background_logs.lock().unwrap_or_else(PoisonError::into_inner);
        let all = self.logs.read().unwrap_or_else(PoisonError::into_inner);
        if retention_due {
            for (tp, (d, l)) in all.iter() {
                l.claim_background();
                background.insert(tp.clone(), (*d, Arc::clone(l)));
            }
            // Everything queued is in the pass.
            self.background.drain();
        } else {
            for tp in self.background.drain() {
                if let Some((d, l)) = all.get(&tp) {
                    background.insert(tp, (*d, Arc::clone(l)));
                }
            }
        }
        let logs: Vec<(usize, Arc<PartitionLog>)> =
            background.values().map(|(d, l)| (*d, Arc::clone(l))).collect();
        self.background_visits.fetch_add(logs.len() as u64, Ordering::Relaxed);
        logs
    }

    /// After the visits: the logs with nothing left to do leave the set until their next
    /// mutation queues them.
    pub(super) fn release_visited(&self) {
        let mut background = self.background_logs.lock().unwrap_or_else(PoisonError::into_inner);
        background.retain(|_, (_, log)| !log.is_offline() && log.release_background());
    }

    /// A log that failed on its own (an append or a flush hit an I/O error, or its load failed)
    /// takes its whole directory offline. Only the logs the background work holds or has queued
    /// are looked at: a log fails in a call that queued it (every mutation and every load
    /// does), and stays held until a tick has seen it, so an idle broker of many partitions
    /// does not walk them all at every call.
    pub(super) fn refresh_offline(&self) {
        let mut candidates: Vec<(usize, Arc<PartitionLog>)> = self
            .background_logs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|(dir_idx, log)| (*dir_idx, Arc::clone(log)))
            .collect();
        {
            let logs = self.logs.read().unwrap_or_else(PoisonError::into_inner);
            candidates.extend(
                self.background
                    .peek()
                    .iter()
                    .filter_map(|tp| logs.get(tp))
                    .map(|(dir_idx, log)| (*dir_idx, Arc::clone(log))),
            );
        }
        let mut failed: Vec<usize> = candidates
            .iter()
            .filter(|(dir_idx, log)| log.is_offline() && !self.dir_is_offline(*dir_idx))
            .map(|(dir_idx, _)| *dir_idx)
            .collect();
        failed.extend(
            self.futures
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .filter(|(dir_idx, log)| log.is_offline() && !self.dir_is_offline(*dir_idx))
                .map(|(dir_idx, _)| *dir_idx),
        );
        for dir_idx in failed {
            self.take_dir_offline(dir_idx, None);
        }
    }
}
