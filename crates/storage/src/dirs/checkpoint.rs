//! Checkpoint files written atomically through `Fs` (spec §3.1, §3.4, §3.5): the four offset
//! checkpoints of a log directory, and the write-temp-fsync-rename-fsync-dir protocol that every
//! small metadata file of storage is written with.
//!
//! The text format itself lives in `seglog_format::checkpoint`; this module adds the files.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use seglog_format::DecodeError;
use seglog_format::checkpoint::{
    OffsetCheckpointEntry, parse_offset_checkpoint, write_offset_checkpoint,
};
use seglog_format::names::validate_topic;

use crate::error::{Error, Result};
use crate::io::{Fs, OpenMode, read_all};

/// The per-partition recovery points of a log directory (Kafka's
/// `LogManager.RecoveryPointCheckpointFile`).
pub const RECOVERY_POINT_CHECKPOINT_FILE: &str = "recovery-point-offset-checkpoint";
/// The per-partition log start offsets of a log directory (Kafka's
/// `LogManager.LogStartOffsetCheckpointFile`).
pub const LOG_START_OFFSET_CHECKPOINT_FILE: &str = "log-start-offset-checkpoint";
/// The per-partition high watermarks of a log directory (Kafka's
/// `ReplicaManager.HighWatermarkFilename`).
pub const REPLICATION_OFFSET_CHECKPOINT_FILE: &str = "replication-offset-checkpoint";
/// The per-partition first dirty offsets of the log cleaner (Kafka's
/// `LogCleanerManager.offsetCheckpointFile`).
pub const CLEANER_OFFSET_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";

/// The suffix of the temporary file an atomic write goes through.
pub const TMP_SUFFIX: &str = ".tmp";

/// The largest checkpoint file read (bounds the allocation; a checkpoint of a million partitions
/// is under 300 MiB).
pub const CHECKPOINT_BYTES_MAX: u64 = 1 << 30;

/// `path` with [`TMP_SUFFIX`] appended to its file name (`<name>.tmp`).
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(TMP_SUFFIX);
    PathBuf::from(name)
}

/// The directory holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Replaces the file at `path` with `bytes` atomically, as Kafka writes every checkpoint
/// (`Utils.atomicMoveWithFallback`, spec §3.1): write `<path>.tmp` (created or truncated),
/// `sync_data` it, rename it over `path`, then `sync_dir` the parent.
///
/// After a crash at any point the file holds its old contents or the new ones, never a mix; a
/// leftover `<path>.tmp` may remain and is ignored by readers (the next write truncates it). On
/// return the new contents and the rename are durable. A failure is an [`Error::Io`] naming the
/// call and the path it was made on; it is not retried (the caller takes the directory offline).
pub fn write_atomically(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> Result<()> {
    write_replacing(fs, path, bytes)?;
    let dir = parent_dir(path);
    fs.sync_dir(dir).map_err(|e| Error::io("sync_dir", dir, e))
}

/// Replaces the file at `path` as [`write_atomically`] does (its bytes are durable before the
/// rename, so the file is whole at any crash) but without the directory's fsync: after a
/// crash `path` holds either these bytes or its previous ones. Only for a file whose previous
/// version is a valid, older state that a load repairs (the leader-epoch checkpoint after a
/// truncation from the start: a load truncates it again from the log start offset, as Kafka
/// does, which writes those truncations without any fsync). A directory fsync waits for the
/// file system's journal, behind every other file's flush; retention deletes a segment of
/// each partition under its lock, so this keeps one such wait per deleted segment out of the
/// append path.
pub fn write_replacing(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    let file = fs.open(&tmp, OpenMode::CreateOrOpen).map_err(|e| Error::io("open", &tmp, e))?;
    file.set_len(0).map_err(|e| Error::io("set_len", &tmp, e))?;
    file.write_all_at(bytes, 0).map_err(|e| Error::io("write", &tmp, e))?;
    file.sync_data().map_err(|e| Error::io("sync_data", &tmp, e))?;
    drop(file);
    fs.rename(&tmp, path).map_err(|e| Error::io("rename", &tmp, e))
}

/// The bytes of the file at `path`, or `None` if it does not exist. A file longer than
/// `bytes_max` is [`Error::Malformed`] (nothing is allocated for it).
pub fn read_if_exists(fs: &dyn Fs, path: &Path, bytes_max: u64) -> Result<Option<Vec<u8>>> {
    let file = match fs.open(path, OpenMode::Read) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(Error::io("open", path, error)),
    };
    let len = file.len().map_err(|e| Error::io("len", path, e))?;
    if len > bytes_max {
        return Err(Error::Malformed {
            path: path.to_path_buf(),
            line: None,
            reason: format!("{len} bytes is more than the limit of {bytes_max}"),
        });
    }
    read_all(file.as_ref()).map(Some).map_err(|e| Error::io("read", path, e))
}

/// The text of the file at `path`, or `None` if it does not exist; not UTF-8 is
/// [`Error::Malformed`] naming the line.
pub fn read_text_if_exists(fs: &dyn Fs, path: &Path, bytes_max: u64) -> Result<Option<String>> {
    let Some(bytes) = read_if_exists(fs, path, bytes_max)? else { return Ok(None) };
    String::from_utf8(bytes).map(Some).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        let line = valid.split(|byte| *byte == b'\n').count();
        Error::Malformed {
            path: path.to_path_buf(),
            line: Some(line),
            reason: "not valid UTF-8".to_owned(),
        }
    })
}

/// A checkpoint parse error from `seglog_format` as an [`Error::Malformed`] naming `path`.
pub(crate) fn malformed_checkpoint(path: &Path, error: &DecodeError) -> Error {
    match error.root() {
        DecodeError::Checkpoint { line, reason } => {
            Error::Malformed { path: path.to_path_buf(), line: Some(*line), reason: reason.clone() }
        }
        other => {
            Error::Malformed { path: path.to_path_buf(), line: None, reason: other.to_string() }
        }
    }
}

/// The offsets of a log-directory checkpoint, by topic and partition.
pub type PartitionOffsets = BTreeMap<(String, i32), i64>;

/// One of a log directory's offset checkpoints (Kafka's `OffsetCheckpointFile`): a
/// `<topic> <partition> <offset>` line per partition, written atomically.
///
/// Which file it is (recovery points, log start offsets, high watermarks, cleaner offsets) is
/// only its name: see [`RECOVERY_POINT_CHECKPOINT_FILE`] and its siblings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCheckpointFile {
    path: PathBuf,
}

impl OffsetCheckpointFile {
    /// The checkpoint at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The checkpoint named `name` in the log directory `dir`.
    pub fn in_dir(dir: &Path, name: &str) -> Self {
        Self::new(dir.join(name))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The offsets in the file. A missing file, an empty file and a file without its count line
    /// hold no offsets. If a partition is listed twice, the later line wins (as in Kafka's map).
    ///
    /// A malformed file is an [`Error::Malformed`] naming the file and line. Kafka logs a
    /// warning and treats such a file as empty (for the recovery points, that means recovering
    /// every log of the directory); this returns the error so the caller decides, and a caller
    /// that wants Kafka's behaviour maps it to an empty map.
    pub fn read(&self, fs: &dyn Fs) -> Result<PartitionOffsets> {
        let Some(text) = read_text_if_exists(fs, &self.path, CHECKPOINT_BYTES_MAX)? else {
            return Ok(BTreeMap::new());
        };
        let entries = parse_offset_checkpoint(&text)
            .map_err(|error| malformed_checkpoint(&self.path, &error))?;
        Ok(entries
            .into_iter()
            .map(|entry| ((entry.topic, entry.partition), entry.offset))
            .collect())
    }

    /// Replaces the file with `offsets`, sorted by topic and partition, atomically (see
    /// [`write_atomically`]). A topic that is not a legal Kafka topic name (which could break
    /// the line format) is an [`Error::InvalidArgument`], and nothing is written.
    pub fn write(&self, fs: &dyn Fs, offsets: &PartitionOffsets) -> Result<()> {
        let mut entries = Vec::with_capacity(offsets.len());
        for ((topic, partition), offset) in offsets {
            validate_topic(topic).map_err(|error| {
                Error::InvalidArgument(format!("cannot checkpoint {topic:?}: {error}"))
            })?;
            entries.push(OffsetCheckpointEntry {
                topic: topic.clone(),
                partition: *partition,
                offset: *offset,
            });
        }
        write_atomically(fs, &self.path, write_offset_checkpoint(&entries).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{FaultKind, FaultPlan};
    use crate::testing::sim_with_dir;

    fn offsets(entries: &[(&str, i32, i64)]) -> PartitionOffsets {
        entries
            .iter()
            .map(|(topic, partition, offset)| (((*topic).to_owned(), *partition), *offset))
            .collect()
    }

    fn read_bytes(fs: &dyn Fs, path: &str) -> Vec<u8> {
        read_if_exists(fs, Path::new(path), u64::MAX).unwrap().unwrap()
    }

    fn create(fs: &dyn Fs, path: &str, bytes: &[u8]) {
        let file = fs.open(Path::new(path), OpenMode::CreateOrOpen).unwrap();
        file.set_len(0).unwrap();
        file.write_all_at(bytes, 0).unwrap();
    }

    #[test]
    fn offsets_round_trip() {
        let fs = sim_with_dir("/d");
        let file = OffsetCheckpointFile::in_dir(Path::new("/d"), RECOVERY_POINT_CHECKPOINT_FILE);
        assert_eq!(file.path(), Path::new("/d/recovery-point-offset-checkpoint"));
        let expected = offsets(&[("orders", 1, 1790), ("a.b-c_d", 7, 0), ("orders", 0, 1834)]);
        file.write(&fs, &expected).unwrap();
        assert_eq!(file.read(&fs).unwrap(), expected);
        file.write(&fs, &BTreeMap::new()).unwrap();
        assert_eq!(read_bytes(&fs, "/d/recovery-point-offset-checkpoint"), b"0\n0\n");
        assert!(file.read(&fs).unwrap().is_empty());
    }

    #[test]
    fn bytes_equal_kafkas_text_format() {
        let fs = sim_with_dir("/d");
        let file = OffsetCheckpointFile::new("/d/replication-offset-checkpoint");
        file.write(&fs, &offsets(&[("orders", 1, 1790), ("orders", 0, 1834)])).unwrap();
        assert_eq!(
            read_bytes(&fs, "/d/replication-offset-checkpoint"),
            b"0\n2\norders 0 1834\norders 1 1790\n"
        );
    }

    #[test]
    fn missing_and_empty_files_hold_no_offsets() {
        let fs = sim_with_dir("/d");
        let file = OffsetCheckpointFile::new("/d/log-start-offset-checkpoint");
        assert!(file.read(&fs).unwrap().is_empty());
        create(&fs, "/d/log-start-offset-checkpoint", b"");
        assert!(file.read(&fs).unwrap().is_empty());
        create(&fs, "/d/log-start-offset-checkpoint", b"0\n");
        assert!(file.read(&fs).unwrap().is_empty());
    }

    #[test]
    fn later_duplicate_wins_on_read() {
        let fs = sim_with_dir("/d");
        create(&fs, "/d/cleaner-offset-checkpoint", b"0\n2\nt 0 5\nt 0 9\n");
        let file = OffsetCheckpointFile::new("/d/cleaner-offset-checkpoint");
        assert_eq!(file.read(&fs).unwrap(), offsets(&[("t", 0, 9)]));
    }

    #[test]
    fn leftover_tmp_is_ignored_and_replaced() {
        let fs = sim_with_dir("/d");
        let file = OffsetCheckpointFile::new("/d/recovery-point-offset-checkpoint");
        file.write(&fs, &offsets(&[("t", 0, 5)])).unwrap();
        // A crashed write's temp file, longer than the next write's contents.
        create(&fs, "/d/recovery-point-offset-checkpoint.tmp", b"0\n3\ngarbage that is long\n");
        assert_eq!(file.read(&fs).unwrap(), offsets(&[("t", 0, 5)]));
        file.write(&fs, &offsets(&[("t", 0, 6)])).unwrap();
        assert_eq!(file.read(&fs).unwrap(), offsets(&[("t", 0, 6)]));
        assert!(!fs.exists(Path::new("/d/recovery-point-offset-checkpoint.tmp")).unwrap());
        assert_eq!(read_bytes(&fs, "/d/recovery-point-offset-checkpoint"), b"0\n1\nt 0 6\n");
    }

    #[test]
    fn malformed_files_name_the_file_and_line() {
        let fs = sim_with_dir("/d");
        let file = OffsetCheckpointFile::new("/d/recovery-point-offset-checkpoint");
        for (text, line) in [
            (&b"1\n0\n"[..], 1),
            (b"0\n2\nt 0 1\n", 4),
            (b"0\n1\nt 0\n", 3),
            (b"0\n1\nt x 1\n", 3),
            (b"0\n1\nt 0 \xff\n", 3),
        ] {
            create(&fs, "/d/recovery-point-offset-checkpoint", text);
            match file.read(&fs) {
                Err(Error::Malformed { path, line: Some(found), .. }) => {
                    assert_eq!(path, Path::new("/d/recovery-point-offset-checkpoint"));
                    assert_eq!(found, line, "{text:?}");
                }
                other => panic!("{text:?} gave {other:?}"),
            }
        }
        let error = file.read(&fs).unwrap_err();
        assert_eq!(
            error.to_string(),
            "malformed /d/recovery-point-offset-checkpoint line 3: not valid UTF-8"
        );
    }

    #[test]
    fn oversized_files_are_rejected_before_reading() {
        let fs = sim_with_dir("/d");
        create(&fs, "/d/x", b"0123456789");
        match read_if_exists(&fs, Path::new("/d/x"), 9) {
            Err(Error::Malformed { line: None, reason, .. }) => {
                assert_eq!(reason, "10 bytes is more than the limit of 9");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(read_if_exists(&fs, Path::new("/d/x"), 10).unwrap().unwrap(), b"0123456789");
    }

    #[test]
    fn write_rejects_topics_that_would_break_the_format() {
        let fs = sim_with_dir("/d");
        let file = OffsetCheckpointFile::new("/d/recovery-point-offset-checkpoint");
        for topic in ["has space", "new\nline", ""] {
            let error = file.write(&fs, &offsets(&[(topic, 0, 1)])).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error:?}");
        }
        assert!(!fs.exists(file.path()).unwrap(), "nothing written");
    }

    #[test]
    fn failures_name_the_call_and_path() {
        let fs = sim_with_dir("/d");
        let path = Path::new("/d/cleaner-offset-checkpoint");
        let expected = [
            ("open", "/d/cleaner-offset-checkpoint.tmp"),
            ("set_len", "/d/cleaner-offset-checkpoint.tmp"),
            ("write", "/d/cleaner-offset-checkpoint.tmp"),
            ("sync_data", "/d/cleaner-offset-checkpoint.tmp"),
            ("rename", "/d/cleaner-offset-checkpoint.tmp"),
            ("sync_dir", "/d"),
        ];
        for (op_idx, (expected_op, expected_path)) in expected.iter().enumerate() {
            fs.set_fault_plan(FaultPlan::FailNth { n: op_idx as u64 + 1, kind: FaultKind::Eio });
            match write_atomically(&fs, path, b"0\n0\n") {
                Err(Error::Io { op, path, source }) => {
                    assert_eq!((op, path.as_path()), (*expected_op, Path::new(expected_path)));
                    assert_eq!(source.raw_os_error(), Some(5));
                }
                other => panic!("op {op_idx}: {other:?}"),
            }
        }
        fs.set_fault_plan(FaultPlan::None);
        let before = fs.op_count();
        write_atomically(&fs, path, b"0\n0\n").unwrap();
        assert_eq!(fs.op_count() - before, expected.len() as u64, "one call per step");
    }

    #[test]
    fn bare_file_names_sync_the_current_directory() {
        assert_eq!(parent_dir(Path::new("x")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/d/x")), Path::new("/d"));
        assert_eq!(tmp_path(Path::new("/d/x")), Path::new("/d/x.tmp"));
    }

    /// Fails the `n`-th call of a checkpoint write of `new` over `old` (if any), crashes, and
    /// checks that the file then reads as all of `old` or all of `new`.
    fn check_crash_during_write(
        old: Option<&PartitionOffsets>,
        new: &PartitionOffsets,
        n: u64,
        kind: FaultKind,
        seed: u64,
    ) -> bool {
        let fs = sim_with_dir("/d");
        let file = OffsetCheckpointFile::new("/d/recovery-point-offset-checkpoint");
        if let Some(old) = old {
            file.write(&fs, old).unwrap();
        }
        fs.set_fault_plan(FaultPlan::FailNth { n, kind });
        let result = file.write(&fs, new);
        fs.set_fault_plan(FaultPlan::None);
        fs.crash(seed);
        let found = file
            .read(&fs)
            .unwrap_or_else(|error| panic!("n {n} {kind:?} seed {seed}: torn file: {error:?}"));
        let empty = BTreeMap::new();
        let old = old.unwrap_or(&empty);
        assert!(
            found == *old || found == *new,
            "n {n} {kind:?} seed {seed}: read {found:?}, neither old {old:?} nor new {new:?}"
        );
        if result.is_ok() {
            assert_eq!(found, *new, "n {n} seed {seed}: a completed write is durable");
        }
        result.is_ok()
    }

    #[test]
    fn crash_at_every_step_leaves_old_or_new_contents() {
        // Big enough to span several 512-byte sectors, so a torn tail would show.
        let old: PartitionOffsets = (0..100).map(|p| (("old-topic".to_owned(), p), 1000)).collect();
        let new: PartitionOffsets =
            (0..150).map(|p| (("new-topic".to_owned(), p), i64::from(p))).collect();
        let n_steps = 6;
        for old in [Some(&old), None] {
            for n in 1..=n_steps + 1 {
                for kind in [FaultKind::Eio, FaultKind::ShortWrite] {
                    let mut n_completed = 0;
                    for seed in 0..16 {
                        n_completed +=
                            u32::from(check_crash_during_write(old, &new, n, kind, seed));
                    }
                    // Only the fault that comes after the last step lets the write complete.
                    let completes = n > n_steps || (kind == FaultKind::ShortWrite && n > 3);
                    assert_eq!(n_completed == 16, completes, "n {n} {kind:?}");
                }
            }
        }
    }
}
