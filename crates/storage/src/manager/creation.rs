//! Creating partitions whole or not at all: a topic of N partitions (CreateTopics) or N new
//! partitions of a topic (CreatePartitions), across errors and crashes.
//!
//! Kafka creates a topic's logs one by one, and a failure half way (a full disk, "Too many open
//! files") leaves the partitions made so far behind. seglog writes a *creation marker*,
//! `.seglog-creating-<topic>.marker` (`first.partition=<n>`), durably into every online log directory
//! before it creates the first partition directory, and removes the markers only once every new
//! partition exists and the directories holding them are fsynced:
//!
//! - an error while creating rolls back at once: the new partitions leave the map and their
//!   directories are removed, then the markers;
//! - a crash (or a failed rollback) leaves a marker, and the next open removes every partition of
//!   the topic at or above `first.partition` before it serves anything, then the markers.
//!
//! So after any failure the topic is as it was before the call: absent, or with its old
//! partitions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use seglog_format::names::{DirState, PartitionDir, validate_topic};

use super::{LogManager, OpenReport};
use crate::dirs::checkpoint::{read_text_if_exists, write_atomically};
use crate::error::{Error, Result};
use crate::log::partition_log::TopicPartition;

/// The name of a creation marker: the prefix, the topic, the suffix (topic names may end in
/// `.tmp`, which the suffix keeps apart from the temporary file of a marker's write).
const CREATING_PREFIX: &str = ".seglog-creating-";
const CREATING_SUFFIX: &str = ".marker";

/// The largest marker file read at open.
const MARKER_BYTES_MAX: u64 = 4096;

fn marker_name(topic: &str) -> String {
    format!("{CREATING_PREFIX}{topic}{CREATING_SUFFIX}")
}

fn marker_text(first_partition: i32) -> String {
    format!("version=0\nfirst.partition={first_partition}\n")
}

/// Parses a marker's `first.partition`.
fn parse_marker(path: &Path, text: &str) -> Result<i32> {
    text.lines()
        .find_map(|line| line.strip_prefix("first.partition="))
        .and_then(|value| value.trim().parse::<i32>().ok())
        .filter(|first| *first >= 0)
        .ok_or_else(|| Error::Malformed {
            path: path.to_path_buf(),
            line: None,
            reason: "a creation marker without a valid first.partition".to_owned(),
        })
}

impl LogManager {
    /// Creates one partition of `topic` with the topic id `topic_id`, as a cluster's broker
    /// does for each replica the metadata gives it (Kafka's `ReplicaManager.applyDelta` making
    /// a local log): the other partitions of the topic may live on other brokers. An existing
    /// partition is an error; the topic's `overrides` are set with the first one.
    pub fn create_replica(
        &self,
        tp: &TopicPartition,
        topic_id: [u8; 16],
        overrides: BTreeMap<String, String>,
    ) -> Result<()> {
        validate_topic(&tp.topic).map_err(|error| Error::InvalidArgument(error.to_string()))?;
        let _serialized = self.topic_changes.lock().unwrap_or_else(PoisonError::into_inner);
        let existing = self.partitions_of(&tp.topic);
        if existing.iter().any(|known| known.topic_partition().partition == tp.partition) {
            return Err(Error::TopicAlreadyExists { topic: tp.to_string() });
        }
        // Partitions above this one would go with a rollback of its creation.
        if existing.iter().any(|known| known.topic_partition().partition > tp.partition) {
            return Err(Error::InvalidArgument(format!(
                "{tp}: a replica is created in partition order, and {} has a higher one",
                tp.topic
            )));
        }
        if existing.is_empty() {
            self.default_log_config()
                .with_overrides(&overrides)
                .map_err(|error| Error::InvalidArgument(format!("topic {}: {error}", tp.topic)))?;
            let mut stored = self.topic_overrides.write().unwrap_or_else(PoisonError::into_inner);
            let changed = if overrides.is_empty() {
                stored.remove(&tp.topic).is_some()
            } else {
                stored.insert(tp.topic.clone(), overrides);
                true
            };
            drop(stored);
            if changed {
                self.store_topic_overrides()?;
            }
        }
        let config = self.topic_config(&tp.topic)?;
        self.add_partitions(&tp.topic, topic_id, tp.partition..tp.partition + 1, &config)?;
        self.topic_ids
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(tp.topic.clone(), topic_id);
        Ok(())
    }

    /// Writes the creation markers of `topic` into every online log directory.
    pub(super) fn begin_creation(&self, topic: &str, first_partition: i32) -> Result<()> {
        let text = marker_text(first_partition);
        for (dir_idx, dir) in self.dirs.iter().enumerate() {
            if self.dir_is_offline(dir_idx) {
                continue;
            }
            let path = dir.path.join(marker_name(topic));
            let result = write_atomically(self.fs.as_ref(), &path, text.as_bytes());
            self.observe(dir_idx, result)?;
        }
        Ok(())
    }

    /// Ends a creation that succeeded: fsyncs the parents of the new partition directories
    /// (`parents`: their log directories' indexes), then removes the markers.
    pub(super) fn commit_creation(&self, topic: &str, parents: &[usize]) -> Result<()> {
        for &dir_idx in parents {
            let parent = self.dirs.get(dir_idx).map(|d| d.path.clone()).unwrap_or_default();
            let result = self.fs.sync_dir(&parent).map_err(|e| Error::io("fsync dir", &parent, e));
            self.observe(dir_idx, result)?;
        }
        self.remove_markers(topic)
    }

    /// Removes the markers of `topic` from every online log directory (where they exist).
    fn remove_markers(&self, topic: &str) -> Result<()> {
        for (dir_idx, dir) in self.dirs.iter().enumerate() {
            if self.dir_is_offline(dir_idx) {
                continue;
            }
            let path = dir.path.join(marker_name(topic));
            let result = (|| {
                if !self.fs.exists(&path).map_err(|e| Error::io("stat", &path, e))? {
                    return Ok(());
                }
                self.fs.remove(&path).map_err(|e| Error::io("remove creation marker", &path, e))?;
                self.fs.sync_dir(&dir.path).map_err(|e| Error::io("fsync dir", &dir.path, e))
            })();
            self.observe(dir_idx, result)?;
        }
        Ok(())
    }

    /// Undoes a creation: removes the partitions of `topic` at or above `first_partition` from
    /// the map and from disk (durably), then the markers. With `first_partition` 0 the topic's
    /// overrides and id go too.
    pub(super) fn roll_back_creation(&self, topic: &str, first_partition: i32) -> Result<()> {
        let removed: Vec<(usize, Arc<crate::log::partition_log::PartitionLog>)> = {
            let mut logs = self.logs.write().unwrap_or_else(PoisonError::into_inner);
            let keys: Vec<TopicPartition> = logs
                .keys()
                .filter(|tp| tp.topic == topic && tp.partition >= first_partition)
                .cloned()
                .collect();
            keys.iter().filter_map(|tp| logs.remove(tp)).collect()
        };
        let mut dirs: Vec<(usize, PathBuf)> =
            removed.iter().map(|(dir_idx, log)| (*dir_idx, log.dir())).collect();
        drop(removed);
        // Directories of new partitions whose log never opened (the failure was in their
        // creation) are found on disk.
        for (dir_idx, entry, name) in self.online_dir_entries()? {
            let Ok(parsed) = PartitionDir::parse(&name) else { continue };
            if parsed.state == DirState::Live
                && parsed.topic == topic
                && parsed.partition >= first_partition
                && !dirs.iter().any(|(_, known)| known == &entry)
            {
                dirs.push((dir_idx, entry));
            }
        }
        let mut parents: Vec<usize> = Vec::new();
        for (dir_idx, path) in &dirs {
            let result = remove_dir_tree(self, path);
            self.observe(*dir_idx, result)?;
            if !parents.contains(dir_idx) {
                parents.push(*dir_idx);
            }
        }
        for dir_idx in parents {
            let parent = self.dirs.get(dir_idx).map(|d| d.path.clone()).unwrap_or_default();
            let result = self.fs.sync_dir(&parent).map_err(|e| Error::io("fsync dir", &parent, e));
            self.observe(dir_idx, result)?;
        }
        if first_partition == 0 {
            self.topic_ids.write().unwrap_or_else(PoisonError::into_inner).remove(topic);
            let had = self
                .topic_overrides
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(topic)
                .is_some();
            if had {
                self.store_topic_overrides()?;
            }
        }
        self.remove_markers(topic)
    }

    /// At open, after loading: rolls back every creation a marker names (a crash or a failed
    /// rollback interrupted it), each recorded in the report with its first partition.
    pub(super) fn recover_creations(&self, report: &mut OpenReport) -> Result<()> {
        let mut pending: Vec<(String, i32)> = Vec::new();
        for (dir_idx, entry, name) in self.online_dir_entries()? {
            let Some(rest) = name.strip_prefix(CREATING_PREFIX) else { continue };
            let Some(topic) = rest.strip_suffix(CREATING_SUFFIX) else {
                // A leftover temporary file of a marker's write: nothing was created yet.
                let result = self.fs.remove(&entry).map_err(|e| Error::io("remove", &entry, e));
                self.observe(dir_idx, result)?;
                continue;
            };
            let text = read_text_if_exists(self.fs.as_ref(), &entry, MARKER_BYTES_MAX)?;
            let first = parse_marker(&entry, text.as_deref().unwrap_or_default())?;
            let first = pending
                .iter()
                .find(|(t, _)| t == topic)
                .map_or(first, |(_, other)| first.min(*other));
            pending.retain(|(t, _)| t != topic);
            pending.push((topic.to_owned(), first));
        }
        for (topic, first) in pending {
            self.roll_back_creation(&topic, first)?;
            report.partitions.retain(|tp, _| !(tp.topic == topic && tp.partition >= first));
            report.rolled_back_creations.push((topic, first));
        }
        Ok(())
    }
}

impl LogManager {
    /// Every entry of every online log directory: its directory's index, path and name.
    fn online_dir_entries(&self) -> Result<Vec<(usize, PathBuf, String)>> {
        let mut entries = Vec::new();
        for (dir_idx, dir) in self.dirs.iter().enumerate() {
            if self.dir_is_offline(dir_idx) {
                continue;
            }
            let listed =
                self.fs.list(&dir.path).map_err(|e| Error::io("list log dir", &dir.path, e));
            for entry in self.observe(dir_idx, listed)? {
                let name = entry.file_name().map(|n| n.to_string_lossy().into_owned());
                entries.push((dir_idx, entry, name.unwrap_or_default()));
            }
        }
        Ok(entries)
    }
}

/// Removes a partition directory and the files in it.
fn remove_dir_tree(manager: &LogManager, path: &Path) -> Result<()> {
    for file in manager.fs.list(path).map_err(|e| Error::io("list", path, e))? {
        manager.fs.remove(&file).map_err(|e| Error::io("remove", &file, e))?;
    }
    manager.fs.remove_dir(path).map_err(|e| Error::io("remove dir", path, e))
}
