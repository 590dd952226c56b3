//! The narrow, positional file-system interface that storage does all its I/O through.
//!
//! Storage code is handed an `Arc<dyn Fs>`: [`StdFs`] in production, and `SimFs` (in tests or
//! with the feature `sim`) to simulate crashes and inject faults. Dynamic dispatch costs nothing
//! next to a syscall. There is no mmap: indexes are read and written through [`File`] as well.
//!
//! Only [`StdFs`] calls the standard file system module; the crate's `clippy.toml` bans it
//! everywhere else.

mod budget;
mod latency;
mod nofile;
#[cfg(any(test, feature = "sim"))]
mod sim;
mod std_fs;

use std::fmt::Debug;
use std::io;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

pub use budget::{BudgetFs, BudgetStats};
pub use latency::{LatencyHistogram, LatencySnapshot};
pub use nofile::{
    BudgetedStdFs, NofileLimit, is_descriptor_exhaustion, open_files_max_default,
    raise_nofile_limit,
};
#[cfg(any(test, feature = "sim"))]
pub use sim::{FaultKind, FaultPlan, SimFs};
pub use std_fs::{FSYNC_TRACE_ENV, StdFs};

/// How [`Fs::open`] opens a file. Every mode but [`OpenMode::Read`] opens for reading and writing;
/// none truncates, and none appends (all writes are positional).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpenMode {
    /// Open an existing file for reading only; fails with `NotFound` if it does not exist.
    /// Writes and `set_len` through the handle fail.
    Read,
    /// Open an existing file for reading and writing; fails with `NotFound` if it does not exist.
    ReadWrite,
    /// Create a new, empty file for reading and writing; fails with `AlreadyExists` if the path
    /// exists.
    CreateNew,
    /// Open the file for reading and writing, creating it empty if it does not exist.
    CreateOrOpen,
}

/// A file system: opens files and changes directories.
///
/// Directory changes (creating a file or directory, `rename`, `remove`, `remove_dir`) are
/// durable only after [`Fs::sync_dir`] of every directory they touch; file contents are durable
/// only after [`File::sync_data`].
pub trait Fs: Send + Sync + Debug {
    /// Opens the file at `path` as `mode` says.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn File>>;

    /// Renames `from` to `to`, atomically replacing a file at `to`. Durable after `sync_dir` of
    /// both parent directories.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the file at `path` (not a directory). Durable after `sync_dir` of its parent.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// The entries of the directory `dir` (files and directories) as full paths (`dir` joined
    /// with the entry name), sorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;

    /// The directories in `dir`, as [`Fs::list`] gives them. The default lists each entry to
    /// tell; a real file system reads the entry types the listing already has.
    fn list_dirs(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(self.list(dir)?.into_iter().filter(|entry| self.list(entry).is_ok()).collect())
    }

    /// Creates `dir` and any missing parents; succeeds if `dir` is already a directory.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Removes the empty directory `dir`.
    fn remove_dir(&self, dir: &Path) -> io::Result<()>;

    /// Whether anything exists at `path`.
    fn exists(&self, path: &Path) -> io::Result<bool>;

    /// Makes the current entries of the directory `dir` durable (fsync of the directory).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Takes an exclusive lock on the file at `path` (created when missing) until the guard is
    /// dropped: Kafka's `.lock`, so that two processes never share a log directory. Fails with
    /// [`io::ErrorKind::WouldBlock`] while another holder has it.
    fn lock_exclusive(&self, path: &Path) -> io::Result<Box<dyn FileLock>>;

    /// The size and free space of the file system holding `path` (statvfs; what Kafka's
    /// DescribeLogDirs v4 reads from `FileStore.getTotalSpace` and `getUsableSpace`).
    fn space(&self, path: &Path) -> io::Result<FsSpace>;
}

/// What [`Fs::space`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsSpace {
    /// The size of the file system.
    pub total_bytes: u64,
    /// The bytes an unprivileged writer can still use.
    pub usable_bytes: u64,
}

/// A held [`Fs::lock_exclusive`] lock; dropping it releases the lock.
pub trait FileLock: Send + Sync + Debug {}

/// An open file, read and written at explicit positions (the role of the `FileChannel` under
/// Kafka's `FileRecords` and index classes).
#[expect(
    clippy::len_without_is_empty,
    reason = "a file's length is an I/O call, not a collection size"
)]
pub trait File: Send + Sync + Debug {
    /// Fills `buf` with the bytes at `position`; fails with `UnexpectedEof` if the file ends
    /// first.
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()>;

    /// Writes all of `bytes` at `position`, extending the file (with zeros over any gap) if it
    /// ends before `position + bytes.len()`.
    fn write_all_at(&self, bytes: &[u8], position: u64) -> io::Result<()>;

    /// Writes `parts` one after another from `position`, as one [`File::write_all_at`] of
    /// their concatenation would, without concatenating them (a stamped batch header and the
    /// producer's records after it). The default writes each part in turn; a real file makes
    /// one vectored write (`pwritev`).
    fn write_all_vectored_at(&self, parts: &[&[u8]], position: u64) -> io::Result<()> {
        let mut at = position;
        for part in parts {
            self.write_all_at(part, at)?;
            at += part.len() as u64;
        }
        Ok(())
    }

    /// Writes up to `len` bytes of the file, from `position`, to the descriptor `out` (a
    /// socket), and returns how many it wrote: fewer when `out` takes fewer, 0 at the file's
    /// end, `WouldBlock` when a non-blocking `out` is full. A real file sends them from the
    /// page cache without passing through this process's memory (`sendfile`, Kafka's
    /// `FileChannel.transferTo`); the default reads them into a buffer of at most 64 KiB and
    /// writes it.
    fn send_at(&self, out: BorrowedFd<'_>, position: u64, len: usize) -> io::Result<usize> {
        const CHUNK_BYTES_MAX: usize = 64 * 1024;
        let file_len = self.len()?;
        let available = usize::try_from(file_len.saturating_sub(position)).unwrap_or(usize::MAX);
        let mut chunk = vec![0; len.min(available).min(CHUNK_BYTES_MAX)];
        if chunk.is_empty() {
            return Ok(0);
        }
        self.read_exact_at(&mut chunk, position)?;
        Ok(rustix::io::write(out, &chunk)?)
    }

    /// The file's length in bytes.
    fn len(&self) -> io::Result<u64>;

    /// Truncates or extends (with zeros) the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Makes the file's contents durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;

    /// The file's last-modified time in milliseconds since the Unix epoch (Kafka uses it for
    /// time-based roll and retention of segments without timestamps).
    fn modified_ms(&self) -> io::Result<i64>;

    /// Sets the file's last-modified time, in milliseconds since the Unix epoch.
    fn set_modified_ms(&self, ms: i64) -> io::Result<()>;
}

/// Reads the whole of `file`.
pub fn read_all(file: &dyn File) -> io::Result<Vec<u8>> {
    let len = usize::try_from(file.len()?)
        .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "file does not fit in memory"))?;
    let mut bytes = vec![0; len];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(bytes)
}
