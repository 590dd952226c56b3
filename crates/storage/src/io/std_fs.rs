//! `StdFs`: the real file system, and the only code in storage that calls `std::fs`.

#![expect(clippy::disallowed_methods, reason = "the one real file system")]

use std::fs;
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{File, FileLock, Fs, FsSpace, OpenMode};

/// The operating system's file system, through `std::fs` (what Kafka reaches through
/// `java.nio.file.Files` and `FileChannel`).
#[derive(Debug, Clone, Copy, Default)]
pub struct StdFs;

impl Fs for StdFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn File>> {
        let mut options = fs::OpenOptions::new();
        options.read(true);
        match mode {
            OpenMode::Read => {}
            OpenMode::ReadWrite => {
                options.write(true);
            }
            OpenMode::CreateNew => {
                options.write(true).create_new(true);
            }
            OpenMode::CreateOrOpen => {
                options.write(true).create(true).truncate(false);
            }
        }
        let file = options.open(path)?;
        if mode == OpenMode::CreateNew
            && let Some(trace) = fsync_trace()
        {
            // A new file holds nothing durable yet (it may reuse a traced file's name).
            trace_fsync(trace, 0, path);
        }
        Ok(Box::new(StdFile { file, path: path.to_path_buf() }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut paths = Vec::new();
        for entry in fs::read_dir(dir)? {
            paths.push(entry?.path());
        }
        paths.sort();
        Ok(paths)
    }

    fn list_dirs(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut paths = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            // The type from the listing (no stat on most file systems); a symbolic link is
            // followed, as `list` would.
            let file_type = entry.file_type()?;
            if file_type.is_dir() || (file_type.is_symlink() && entry.path().is_dir()) {
                paths.push(entry.path());
            }
        }
        paths.sort();
        Ok(paths)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir(dir)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        fs::exists(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        fs::File::open(dir)?.sync_all()
    }

    fn lock_exclusive(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        let file = fs::OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(StdFileLock { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another process", path.display()),
            )),
            Err(fs::TryLockError::Error(error)) => Err(error),
        }
    }

    fn space(&self, path: &Path) -> io::Result<FsSpace> {
        let stat = rustix::fs::statvfs(path).map_err(io::Error::from)?;
        Ok(FsSpace {
            total_bytes: stat.f_blocks.saturating_mul(stat.f_frsize),
            usable_bytes: stat.f_bavail.saturating_mul(stat.f_frsize),
        })
    }
}

/// The environment variable naming the fsync trace (see [`fsync_trace`]).
pub const FSYNC_TRACE_ENV: &str = "SEGLOG_FSYNC_TRACE";

/// The fsync trace, for power-loss tests of real processes: when `SEGLOG_FSYNC_TRACE` names a
/// file, every successful fsync of a file through [`StdFs`] appends a line
/// `<length> <absolute path>` to it, the length the fsync made durable. After a SIGKILL (which
/// keeps the page cache), truncating each file to its last line's length (and a file without
/// one to nothing) leaves what a power loss at that moment could have left
/// (docs/durability.md). Off (one relaxed load per fsync) unless the variable is set.
fn fsync_trace() -> Option<&'static fs::File> {
    static TRACE: OnceLock<Option<fs::File>> = OnceLock::new();
    TRACE
        .get_or_init(|| {
            let path = std::env::var_os(FSYNC_TRACE_ENV)?;
            fs::OpenOptions::new().create(true).append(true).open(path).ok()
        })
        .as_ref()
}

/// One line of the trace, in one `write` to a file opened with `O_APPEND`, so that the
/// processes sharing a trace never interleave lines. A line that cannot be written is left out:
/// the trace is a test's aid, and a test reads a missing line as a loss.
fn trace_fsync(mut trace: &fs::File, len: u64, path: &Path) {
    use std::io::Write as _;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let line = format!("{len} {}\n", absolute.display());
    let _ = trace.write_all(line.as_bytes());
}

/// An OS file lock held through its open file; closing the file releases it.
#[derive(Debug)]
struct StdFileLock {
    _file: fs::File,
}

impl FileLock for StdFileLock {}

/// A file opened by [`StdFs`].
#[derive(Debug)]
struct StdFile {
    file: fs::File,
    path: PathBuf,
}

impl File for StdFile {
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, position)
    }

    fn write_all_at(&self, bytes: &[u8], position: u64) -> io::Result<()> {
        self.file.write_all_at(bytes, position)
    }

    fn write_all_vectored_at(&self, parts: &[&[u8]], position: u64) -> io::Result<()> {
        // One `pwritev` per call, as many as a short write needs.
        let mut slices: Vec<io::IoSlice<'_>> = parts.iter().map(|p| io::IoSlice::new(p)).collect();
        let mut left = slices.as_mut_slice();
        io::IoSlice::advance_slices(&mut left, 0); // drops leading empty parts
        let mut at = position;
        while !left.is_empty() {
            match rustix::io::pwritev(&self.file, left, at) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(written) => {
                    at += written as u64;
                    io::IoSlice::advance_slices(&mut left, written);
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(errno) => return Err(errno.into()),
            }
        }
        Ok(())
    }

    fn send_at(&self, out: BorrowedFd<'_>, position: u64, len: usize) -> io::Result<usize> {
        // One `sendfile`: the page cache to the socket, at `position` (the file's own offset
        // is not moved, so concurrent positional reads are unaffected).
        let mut offset = position;
        loop {
            match rustix::fs::sendfile(out, &self.file, Some(&mut offset), len) {
                Err(rustix::io::Errno::INTR) => {}
                result => return Ok(result?),
            }
        }
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        let Some(trace) = fsync_trace() else { return self.file.sync_data() };
        // The length before the fsync is what it made durable (a write racing with it may or
        // may not be): a lower bound, as a power-loss model wants.
        let len = self.file.metadata()?.len();
        self.file.sync_data()?;
        trace_fsync(trace, len, &self.path);
        Ok(())
    }

    fn modified_ms(&self) -> io::Result<i64> {
        let modified = self.file.metadata()?.modified()?;
        let ms = match modified.duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_millis()),
            Err(before) => i64::try_from(before.duration().as_millis()).map(|ms| -ms),
        };
        ms.map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("modification time of {} is out of range", self.path.display()),
            )
        })
    }

    fn set_modified_ms(&self, ms: i64) -> io::Result<()> {
        let since_epoch = Duration::from_millis(ms.unsigned_abs());
        let time = if ms >= 0 {
            UNIX_EPOCH.checked_add(since_epoch)
        } else {
            UNIX_EPOCH.checked_sub(since_epoch)
        };
        let time: SystemTime = time.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("modification time {ms} ms is out of range"),
            )
        })?;
        self.file.set_modified(time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::read_all;

    fn check_mode_fails(fs: &dyn Fs, path: &Path, mode: OpenMode, kind: io::ErrorKind) {
        let error = fs.open(path, mode).unwrap_err();
        assert_eq!(error.kind(), kind, "{mode:?} on {}", path.display());
    }

    /// Sends `len` bytes from `position` through `send_at` calls into a socket pair, and reads
    /// them from the other end.
    fn sent(file: &dyn File, position: u64, len: usize) -> Vec<u8> {
        use std::io::Read;
        use std::os::fd::AsFd;
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut done = 0;
        while done < len {
            let n = file.send_at(ours.as_fd(), position + done as u64, len - done).unwrap();
            if n == 0 {
                break;
            }
            done += n;
        }
        drop(ours);
        let mut received = Vec::new();
        theirs.read_to_end(&mut received).unwrap();
        received
    }

    #[test]
    fn send_at_sends_the_range_from_each_file_system() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let path = dir.path().join("a.log");
        StdFs.open(&path, OpenMode::CreateNew).unwrap().write_all_at(&bytes, 0).unwrap();
        let budget = crate::io::BudgetFs::new(std::sync::Arc::new(StdFs), 4);
        let sim = crate::io::SimFs::new();
        sim.create_dir_all(dir.path()).unwrap();
        sim.open(&path, OpenMode::CreateNew).unwrap().write_all_at(&bytes, 0).unwrap();
        let files: [(&str, Box<dyn File>); 3] = [
            ("StdFs (sendfile)", StdFs.open(&path, OpenMode::Read).unwrap()),
            ("BudgetFs over StdFs", budget.open(&path, OpenMode::Read).unwrap()),
            ("SimFs (read and write)", sim.open(&path, OpenMode::Read).unwrap()),
        ];
        for (name, file) in files {
            assert!(sent(file.as_ref(), 0, bytes.len()) == bytes, "{name}: the whole file");
            assert!(sent(file.as_ref(), 777, 70_000) == bytes[777..70_777], "{name}: a range");
            // Past the end: what there is, then 0.
            assert!(sent(file.as_ref(), 99_990, 50) == bytes[99_990..], "{name}: the tail");
            assert_eq!(sent(file.as_ref(), 100_000, 10), b"", "{name}: at the end");
        }
    }

    #[test]
    fn open_modes() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let path = dir.path().join("a.log");

        check_mode_fails(&fs, &path, OpenMode::Read, io::ErrorKind::NotFound);
        check_mode_fails(&fs, &path, OpenMode::ReadWrite, io::ErrorKind::NotFound);

        let file = fs.open(&path, OpenMode::CreateNew).unwrap();
        file.write_all_at(b"hello", 0).unwrap();
        drop(file);
        check_mode_fails(&fs, &path, OpenMode::CreateNew, io::ErrorKind::AlreadyExists);

        // CreateOrOpen on an existing file keeps its contents.
        let file = fs.open(&path, OpenMode::CreateOrOpen).unwrap();
        assert_eq!(read_all(file.as_ref()).unwrap(), b"hello");
        drop(file);
        let file = fs.open(&dir.path().join("b.log"), OpenMode::CreateOrOpen).unwrap();
        assert_eq!(file.len().unwrap(), 0);

        let file = fs.open(&path, OpenMode::Read).unwrap();
        assert_eq!(read_all(file.as_ref()).unwrap(), b"hello");
        assert!(file.write_all_at(b"x", 0).is_err());
        file.write_all_at(b"", 0).unwrap();
        file.read_exact_at(&mut [], 9).unwrap();
        assert!(file.set_len(0).is_err());

        let file = fs.open(&path, OpenMode::ReadWrite).unwrap();
        file.write_all_at(b"J", 0).unwrap();
        assert_eq!(read_all(file.as_ref()).unwrap(), b"Jello");
    }

    #[test]
    fn positional_reads_writes_and_set_len() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let file = fs.open(&dir.path().join("a.log"), OpenMode::CreateNew).unwrap();
        file.write_all_at(b"abc", 0).unwrap();
        file.write_all_at(b"xyz", 5).unwrap();
        assert_eq!(file.len().unwrap(), 8);
        assert_eq!(read_all(file.as_ref()).unwrap(), b"abc\0\0xyz");

        let mut buf = [0; 3];
        file.read_exact_at(&mut buf, 4).unwrap();
        assert_eq!(&buf, b"\0xy");
        let error = file.read_exact_at(&mut buf, 6).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);

        file.set_len(2).unwrap();
        assert_eq!(read_all(file.as_ref()).unwrap(), b"ab");
        file.set_len(4).unwrap();
        assert_eq!(read_all(file.as_ref()).unwrap(), b"ab\0\0");
        file.sync_data().unwrap();
    }

    #[test]
    fn directories_list_rename_remove() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let partition = dir.path().join("topic-0");
        fs.create_dir_all(&partition.join("nested")).unwrap();
        fs.create_dir_all(&partition).unwrap();
        for name in ["b.log", "a.index", "c.log"] {
            fs.open(&partition.join(name), OpenMode::CreateNew).unwrap();
        }
        let expected: Vec<PathBuf> = ["a.index", "b.log", "c.log", "nested"]
            .iter()
            .map(|name| partition.join(name))
            .collect();
        assert_eq!(fs.list(&partition).unwrap(), expected);

        fs.rename(&partition.join("b.log"), &partition.join("b.log.deleted")).unwrap();
        assert!(!fs.exists(&partition.join("b.log")).unwrap());
        assert!(fs.exists(&partition.join("b.log.deleted")).unwrap());
        fs.remove(&partition.join("b.log.deleted")).unwrap();
        assert!(!fs.exists(&partition.join("b.log.deleted")).unwrap());
        assert_eq!(
            fs.remove(&partition.join("b.log.deleted")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );

        fs.sync_dir(&partition).unwrap();
        fs.sync_dir(dir.path()).unwrap();

        fs.remove_dir(&partition.join("nested")).unwrap();
        assert!(fs.remove_dir(&partition).is_err(), "not empty");
        assert_eq!(
            fs.list(&dir.path().join("missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn modified_ms_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let file = fs.open(&dir.path().join("a.log"), OpenMode::CreateNew).unwrap();
        for ms in [1_700_000_000_123, 0, 86_400_000] {
            file.set_modified_ms(ms).unwrap();
            assert_eq!(file.modified_ms().unwrap(), ms);
        }
    }

    #[test]
    fn a_vectored_write_is_the_concatenation_at_its_position_and_list_dirs_lists_only_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let file = fs.open(&dir.path().join("a.log"), OpenMode::CreateNew).unwrap();
        file.write_all_at(b"0123456789", 0).unwrap();
        let big = vec![7u8; 1 << 20];
        file.write_all_vectored_at(&[b"ab", &[], &big, b"cd"], 4).unwrap();
        let mut got = vec![0u8; 4 + 2 + big.len() + 2];
        file.read_exact_at(&mut got, 0).unwrap();
        assert_eq!(got, [&b"0123ab"[..], &big, b"cd"].concat());
        assert_eq!(file.len().unwrap(), got.len() as u64);
        file.write_all_vectored_at(&[], 0).unwrap();
        assert_eq!(file.len().unwrap(), got.len() as u64, "nothing to write writes nothing");

        fs.create_dir_all(&dir.path().join("t-0")).unwrap();
        let dirs = fs.list_dirs(dir.path()).unwrap();
        assert_eq!(dirs, vec![dir.path().join("t-0")], "a.log is a file");
    }
}
