//! What a log tells its manager's background work (`LogManager::tick`): whether it needs a
//! visit. Every mutation queues the log once; the manager releases it once nothing can become
//! due, so an idle log costs nothing between retention passes.

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use super::{DurabilityMode, PartitionLog, TopicPartition};
use std::sync::Arc;

/// The logs that asked for background work (a flush that can become due, segments waiting for
/// delayed deletion) since the manager last looked: it visits those each tick instead of every
/// log, so an idle log costs nothing between retention passes.
#[derive(Debug, Default)]
pub struct BackgroundQueue {
    logs: Mutex<Vec<TopicPartition>>,
    /// Mutations of any log so far (and of the set of logs, [`BackgroundQueue::note_change`]):
    /// the manager's periodic checkpoint writes nothing when this has not moved.
    changes: std::sync::atomic::AtomicU64,
}

impl BackgroundQueue {
    /// Counts a change that a checkpoint records (a log added or removed).
    pub fn note_change(&self) {
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// The logs queued now, left queued.
    pub fn peek(&self) -> Vec<TopicPartition> {
        self.logs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The changes counted so far.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::SeqCst)
    }

    /// Takes the queued logs.
    pub fn drain(&self) -> Vec<TopicPartition> {
        std::mem::take(&mut *self.logs.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

impl PartitionLog {
    /// Hands the log its manager's background queue (once; later calls are ignored) and queues
    /// it, so that the manager looks at it at least once (an unloaded log queues itself when it
    /// loads).
    pub fn set_background_queue(&self, queue: Arc<BackgroundQueue>) {
        if self.background.set(queue).is_ok() && self.is_loaded() {
            self.mark_background();
        }
    }

    /// Queues the log for the manager's background work, unless it is queued already.
    pub(super) fn mark_background(&self) {
        let Some(queue) = self.background.get() else { return };
        queue.note_change();
        if !self.queued.swap(true, Ordering::SeqCst) {
            queue
                .logs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(self.topic_partition.clone());
        }
    }

    /// Marks the log as being worked on by the manager (a retention pass over every log), so
    /// that the pass's own calls do not queue it again.
    pub fn claim_background(&self) {
        self.queued.store(true, Ordering::SeqCst);
    }

    /// Called by the manager after its background work on the log: whether it still needs
    /// that work (unflushed data under a finite flush interval, or segments waiting for
    /// deletion). When not, the log leaves the queue until its next mutation.
    pub fn release_background(&self) -> bool {
        // Cleared first: a mutation racing with the check below queues the log again.
        self.queued.store(false, Ordering::SeqCst);
        let pending = self.read_state().is_ok_and(|state| {
            let interval = match state.config.durability {
                DurabilityMode::GroupCommit => {
                    state.config.group_commit_interval_ms.min(state.config.flush_ms)
                }
                _ => state.config.flush_ms,
            };
            let unflushed = state.local.log_end_offset() > state.local.recovery_point();
            (unflushed && interval < i64::MAX)
                || state.roll_flush_pending().is_some()
                || state.local.n_pending_deletes() > 0
        });
        if pending {
            self.queued.store(true, Ordering::SeqCst);
        }
        pending
    }
}
