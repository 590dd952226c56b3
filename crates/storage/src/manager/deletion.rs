//! Removing logs: a topic's partitions, or one partition, renamed away for deletion (then
//! removed by the background work) or kept aside as stray.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, RwLock};

use seglog_format::names::{DirState, PartitionDir};

use super::LogManager;
use crate::error::{Error, Result};
use crate::log::partition_log::{PartitionLog, TopicPartition};

impl LogManager {
    /// Deletes `topic`: each partition directory is renamed `topic-N.<id>-delete` at once (and
    /// the rename made durable), then removed by the background work.
    pub fn delete_topic(&self, topic: &str) -> Result<usize> {
        self.remove_topic(topic, None, false)
    }

    /// Deletes one partition of a topic, as [`delete_topic`](Self::delete_topic) does each of
    /// its partitions (a replica a reassignment moved away, Kafka's `stopPartitions` with
    /// `deleteLocalLog`); the topic's id and configs stay while it has partitions here.
    pub fn delete_partition(&self, tp: &TopicPartition) -> Result<usize> {
        self.remove_topic(&tp.topic, Some(tp.partition), false)
    }

    /// Moves `topic`'s logs aside as stray (Kafka's `asyncDelete` with `isStray`): renamed
    /// `<topic>-<partition>.<id>-stray` and kept for an operator, never deleted.
    pub fn move_topic_aside(&self, topic: &str) -> Result<usize> {
        self.remove_topic(topic, None, true)
    }

    /// Renames `topic`'s partitions (or `only` that one) away for deletion, or as stray.
    fn remove_topic(&self, topic: &str, only: Option<i32>, stray: bool) -> Result<usize> {
        let wanted =
            |tp: &TopicPartition| tp.topic == topic && only.is_none_or(|p| p == tp.partition);
        let _serialized = self.topic_changes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut no_move = self.moves.lock().unwrap_or_else(PoisonError::into_inner);
        // Future logs go first, so that a crash never leaves one without its live log (which
        // the next open would take for a move past its commit point).
        for tp in matching(&self.futures, wanted) {
            self.abort_move(&tp, &mut no_move)?;
        }
        // No cleaning round may write into a directory being renamed away (Kafka's
        // `abortCleaning` before `deleteLog`).
        let doomed = matching(&self.logs, wanted);
        for tp in &doomed {
            self.abort_and_pause_cleaning(tp);
        }
        let removed: Vec<(TopicPartition, usize, Arc<PartitionLog>)> = {
            let mut logs = self.logs.write().unwrap_or_else(PoisonError::into_inner);
            self.background.note_change();
            let keys: Vec<TopicPartition> = logs.keys().filter(|tp| wanted(tp)).cloned().collect();
            keys.into_iter()
                .filter_map(|tp| logs.remove(&tp).map(|(d, log)| (tp, d, log)))
                .collect()
        };
        for tp in &doomed {
            let dir_idx = removed.iter().find(|(r, ..)| r == tp).map_or(0, |(_, d, _)| *d);
            self.forget_cleaning(dir_idx, tp);
        }
        if removed.is_empty() {
            return Err(Error::UnknownTopicOrPartition { topic: topic.to_owned(), partition: -1 });
        }
        let topic_left = self.partitions().iter().any(|tp| tp.topic == topic);
        if !topic_left {
            self.topic_ids.write().unwrap_or_else(PoisonError::into_inner).remove(topic);
        }
        for (tp, dir_idx, log) in &removed {
            let parent = self.dirs.get(*dir_idx).map(|d| d.path.clone()).unwrap_or_default();
            let unique = self.delete_counter.fetch_add(1, Ordering::SeqCst);
            let id = format!("{:016x}{:016x}", self.clock.now_ms(), unique);
            let to = parent.join(
                PartitionDir {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    state: if stray { DirState::Stray(id) } else { DirState::Delete(id) },
                }
                .to_name(),
            );
            let result = self
                .fs
                .rename(&log.dir(), &to)
                .map_err(|e| Error::io("rename for delete", log.dir(), e))
                .and_then(|()| {
                    self.fs.sync_dir(&parent).map_err(|e| Error::io("fsync dir", &parent, e))
                });
            self.observe(*dir_idx, result)?;
            if !stray {
                self.pending_dir_deletes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((*dir_idx, to));
            }
        }
        if !topic_left {
            self.topic_overrides.write().unwrap_or_else(PoisonError::into_inner).remove(topic);
            self.store_topic_overrides()?;
        }
        Ok(removed.len())
    }

    /// Removes the directories renamed for deletion.
    pub(super) fn delete_pending_dirs(&self) -> Result<Vec<PathBuf>> {
        let pending = std::mem::take(
            &mut *self.pending_dir_deletes.lock().unwrap_or_else(PoisonError::into_inner),
        );
        let mut deleted = Vec::new();
        for (dir_idx, path) in pending {
            let result = (|| {
                for file in self.fs.list(&path).map_err(|e| Error::io("list", &path, e))? {
                    self.fs.remove(&file).map_err(|e| Error::io("remove", &file, e))?;
                }
                self.fs.remove_dir(&path).map_err(|e| Error::io("remove dir", &path, e))?;
                let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
                self.fs.sync_dir(&parent).map_err(|e| Error::io("fsync dir", &parent, e))
            })();
            self.observe(dir_idx, result)?;
            deleted.push(path);
        }
        Ok(deleted)
    }
}

/// The partitions of `logs` that `wanted` takes.
fn matching(
    logs: &RwLock<BTreeMap<TopicPartition, (usize, Arc<PartitionLog>)>>,
    wanted: impl Fn(&TopicPartition) -> bool,
) -> Vec<TopicPartition> {
    let logs = logs.read().unwrap_or_else(PoisonError::into_inner);
    logs.keys().filter(|tp| wanted(tp)).cloned().collect()
}
