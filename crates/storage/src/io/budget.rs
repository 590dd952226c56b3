//! `BudgetFs`: an [`Fs`] that keeps at most a budget of files open (`seglog.open.files.max`).
//!
//! Kafka keeps every segment's three files open for the life of the log, so a broker with many
//! partitions needs an RLIMIT_NOFILE in the hundreds of thousands. seglog opens files through
//! `BudgetFs` instead: every [`File`] it hands out is a *handle* that remembers its path, and the
//! operating system's file behind it is opened on first use and closed again when the budget
//! needs the descriptor for another handle. The storage code above sees ordinary files and works
//! unchanged with any budget down to a few descriptors (only the files in use at one moment need
//! to be open).
//!
//! # Rules
//!
//! - **Eviction** is a clock (second-chance) sweep over the open handles: a handle used since the
//!   last sweep is kept once more. A handle with writes since its last `sync_data` (*dirty*;
//!   a `set_len` alone is not a write: it carries no data, and storage syncs every truncation it
//!   relies on before returning) is passed over while a clean one can go: there are two clocks,
//!   and the clean clock moves a handle it finds dirty to the dirty clock, which is swept only
//!   when the clean one has no victim. Then the victim is synced
//!   (`sync_data`) before it is closed, and if that sync fails the error is kept and returned by
//!   the handle's next call, so that the owner (a partition log, which then poisons itself)
//!   learns of it as if its own `sync_data` had failed. Nothing written is left to the kernel's
//!   error reporting across a closed descriptor.
//! - **`sync_data` of a closed handle with nothing unsynced does nothing** (a handle opened for
//!   writing starts unsynced: the file may hold unsynced writes of an earlier process): its
//!   eviction synced
//!   what it wrote, so nothing is reopened (a clean shutdown of many idle partitions costs
//!   neither descriptors nor fsyncs), unless a dropped handle of the same file left changes
//!   unsynced (an *orphan*): then it syncs, as an fsync through any descriptor would.
//! - **Renames and removals follow Unix semantics.** A handle follows its file across
//!   [`Fs::rename`] (its path is updated, for a renamed directory too). Before a file with live
//!   handles is removed or replaced by a rename, the handles are opened and *pinned*: they keep
//!   their descriptor (outside the clock) until dropped, so reads of a deleted segment still see
//!   its bytes.
//! - **EMFILE/ENFILE** from an open makes the budget close open handles and try once more; a
//!   handle that is in use by another thread keeps its descriptor until that call returns, so the
//!   count can pass the budget by the calls in flight.
//! - Locks ([`Fs::lock_exclusive`]) are not budgeted: a lock lives as long as its descriptor.
//!
//! A reopened handle uses [`OpenMode::Read`] if it was opened so, else [`OpenMode::ReadWrite`]
//! (the file exists by then).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::io;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::latency::{LatencyHistogram, LatencySnapshot};
use super::{File, FileLock, Fs, FsSpace, OpenMode, is_descriptor_exhaustion};

/// What a [`BudgetFs`] has done so far (for metrics and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetStats {
    /// Descriptors open now (handles holding one, pinned ones included).
    pub open_files: usize,
    /// The most descriptors open at one time so far.
    pub open_files_peak: usize,
    /// Handles alive now (open or not).
    pub handles: usize,
    /// Files opened, first opens and reopens together.
    pub opens: u64,
    /// Descriptors closed to stay within the budget.
    pub evictions: u64,
    /// Evictions of dirty handles, each synced first.
    pub dirty_evictions: u64,
    /// Opens that failed with EMFILE or ENFILE and were retried after closing handles.
    pub emfile_retries: u64,
    /// Entries in the eviction clocks, those of dropped handles not yet swept included.
    pub clock_entries: usize,
}

/// An [`Fs`] over another that keeps at most `open_files_max` of its files open (see the module
/// documentation).
#[derive(Debug, Clone)]
pub struct BudgetFs {
    pool: Arc<Pool>,
}

impl BudgetFs {
    /// `inner` with at most `open_files_max` (at least 1) files open at once.
    pub fn new(inner: Arc<dyn Fs>, open_files_max: usize) -> Self {
        Self {
            pool: Arc::new(Pool {
                inner,
                open_files_max: open_files_max.max(1),
                next_id: AtomicU64::new(0),
                state: Mutex::new(PoolState::default()),
                fsync_latency: LatencyHistogram::default(),
            }),
        }
    }

    /// The budget.
    pub fn open_files_max(&self) -> usize {
        self.pool.open_files_max
    }

    /// How long its fsyncs (files and directories) took, since it was made.
    pub fn fsync_latency(&self) -> LatencySnapshot {
        self.pool.fsync_latency.snapshot()
    }

    /// What it has done so far.
    pub fn stats(&self) -> BudgetStats {
        let state = self.pool.lock();
        BudgetStats {
            open_files: state.open_files,
            open_files_peak: state.open_files_peak,
            handles: state.by_path.len(),
            opens: state.opens,
            evictions: state.evictions,
            dirty_evictions: state.dirty_evictions,
            emfile_retries: state.emfile_retries,
            clock_entries: state.clock.len() + state.dirty_clock.len(),
        }
    }
}

struct Pool {
    inner: Arc<dyn Fs>,
    open_files_max: usize,
    next_id: AtomicU64,
    state: Mutex<PoolState>,
    /// Every fsync's duration.
    fsync_latency: LatencyHistogram,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("inner", &self.inner)
            .field("open_files_max", &self.open_files_max)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct PoolState {
    /// The open, unpinned handles in clock order: the clean clock, where every handle starts
    /// and which eviction takes from first.
    clock: VecDeque<Weak<Slot>>,
    /// Handles the clean clock found dirty, in clock order.
    dirty_clock: VecDeque<Weak<Slot>>,
    /// Every live handle by its current path and its id. The path is the one its handle's
    /// state holds (one allocation for both): a closed handle of an inactive segment costs
    /// this entry and its `Slot`.
    by_path: BTreeMap<(Arc<Path>, u64), Weak<Slot>>,
    /// Files whose handles were dropped with changes not synced: a later handle's
    /// `sync_data` must reach the disk for them even when that handle wrote nothing.
    orphans: BTreeSet<PathBuf>,
    /// Handles dropped since the clocks were last compacted. A dropped handle's entry stays in
    /// its clock (and keeps the `Slot`'s allocation, through the `Weak`) until a sweep passes
    /// it, and a pool under its budget never sweeps: so once the dropped outnumber half the
    /// clocks' entries, [`PoolState::compact_clocks`] drops them all (amortised O(1) a drop).
    dropped_since_compaction: usize,
    open_files: usize,
    open_files_peak: usize,
    opens: u64,
    evictions: u64,
    dirty_evictions: u64,
    emfile_retries: u64,
}

/// Dropped handles below which the clocks are never compacted.
const COMPACTION_DROPPED_MIN: usize = 64;

impl PoolState {
    /// Notes a dropped handle, and drops the clocks' entries of dropped handles once they may
    /// be half the clocks.
    fn note_dropped(&mut self) {
        self.dropped_since_compaction += 1;
        let entries = self.clock.len() + self.dirty_clock.len();
        if self.dropped_since_compaction >= COMPACTION_DROPPED_MIN
            && self.dropped_since_compaction * 2 >= entries
        {
            self.compact_clocks();
        }
    }

    fn compact_clocks(&mut self) {
        self.clock.retain(|weak| weak.strong_count() > 0);
        self.dirty_clock.retain(|weak| weak.strong_count() > 0);
        for clock in [&mut self.clock, &mut self.dirty_clock] {
            if clock.capacity() > 2 * clock.len() + COMPACTION_DROPPED_MIN {
                clock.shrink_to(clock.len() + COMPACTION_DROPPED_MIN);
            }
        }
        self.dropped_since_compaction = 0;
    }
}

/// One handle's state.
struct Slot {
    id: u64,
    pool: Arc<Pool>,
    reopen_mode: OpenMode,
    /// Set by every use; cleared by the clock as it passes.
    referenced: AtomicBool,
    inner: Mutex<SlotState>,
}

struct SlotState {
    path: Arc<Path>,
    file: Option<Arc<dyn File>>,
    /// Written since the last successful `sync_data`.
    dirty: bool,
    /// Written or resized since the last successful `sync_data` (a resize alone does not make
    /// an eviction sync, but the owner's `sync_data` must reach the disk).
    unsynced: bool,
    /// Its file was removed or replaced: keep the descriptor until the handle is dropped.
    pinned: bool,
    /// A failed sync of an eviction, returned by the next call.
    failed: Option<io::Error>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The handles one eviction pass looks at, at most.
const EVICTION_SCAN_MAX: usize = 256;

impl Pool {
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        lock(&self.state)
    }

    /// Opens `path` in the inner file system for a handle, with a descriptor of the budget
    /// reserved first (closing others while the count is over it); on EMFILE/ENFILE closes up to
    /// a quarter of the budget's handles and tries once more. The caller counts the descriptor
    /// in with [`Pool::admit`].
    fn open_inner(
        &self,
        path: &Path,
        mode: OpenMode,
        keep: Option<u64>,
    ) -> io::Result<Box<dyn File>> {
        let over = {
            let mut state = self.lock();
            state.open_files += 1;
            state.open_files.saturating_sub(self.open_files_max)
        };
        if over > 0 {
            self.evict(over, keep);
        }
        let opened = match self.inner.open(path, mode) {
            Err(error) if is_descriptor_exhaustion(&error) => {
                self.lock().emfile_retries += 1;
                self.evict((self.open_files_max / 4).max(1), keep);
                self.inner.open(path, mode)
            }
            other => other,
        };
        let mut state = self.lock();
        match opened {
            Ok(file) => {
                state.opens += 1;
                state.open_files_peak = state.open_files_peak.max(state.open_files);
                Ok(file)
            }
            Err(error) => {
                state.open_files = state.open_files.saturating_sub(1);
                Err(error)
            }
        }
    }

    /// Puts a handle whose descriptor [`Pool::open_inner`] counted into the clock.
    fn admit(&self, slot: &Arc<Slot>) {
        self.lock().clock.push_back(Arc::downgrade(slot));
    }

    /// Closes up to `count` open, unpinned handles other than `keep`: clean ones by the clean
    /// clock first, dirty ones (synced first) by the dirty clock only when no clean one is
    /// left to take.
    fn evict(&self, count: usize, keep: Option<u64>) {
        let mut closed = 0;
        let mut rounds_without_victim = 0;
        // Each pass gives a handle used since the last one a second chance, and looks at no
        // more than `EVICTION_SCAN_MAX` handles of each clock, so that an eviction costs the
        // same with thousands of handles open. A handle the clean clock finds dirty moves to
        // the dirty clock without counting against the pass (it moves once per time it is
        // made dirty), and one the dirty clock finds synced is a clean victim: so the fsync of
        // a dirty victim runs only when no clean victim is open, and a roll storm (every
        // partition opening new files while every active `.log` holds unsynced appends) closes
        // the new, clean files instead of fsyncing the logs inside the produce path.
        while closed < count {
            let mut victims: Vec<(Arc<Slot>, Arc<dyn File>, bool)> = Vec::new();
            // Every handle upgraded under the pool's lock is dropped after it is released: the
            // last reference of a handle whose owner dropped it meanwhile runs `Slot::drop`,
            // which takes the pool's lock.
            let mut upgraded: Vec<Arc<Slot>> = Vec::new();
            {
                let mut state = self.lock();
                let wanted = count - closed;
                let PoolState { clock, dirty_clock, .. } = &mut *state;
                Self::sweep(clock, Some(dirty_clock), wanted, keep, &mut victims, &mut upgraded);
                if victims.len() < wanted {
                    Self::sweep(dirty_clock, None, wanted, keep, &mut victims, &mut upgraded);
                }
                for (_, _, dirty) in &victims {
                    state.open_files = state.open_files.saturating_sub(1);
                    state.evictions += 1;
                    if *dirty {
                        state.dirty_evictions += 1;
                    }
                }
            }
            drop(upgraded);
            let found = victims.len();
            // Sync dirty victims outside the pool's lock; a failure waits in the handle.
            for (slot, file, dirty) in victims {
                if dirty && let Err(error) = file.sync_data() {
                    let mut inner = lock(&slot.inner);
                    inner.dirty = true;
                    inner.unsynced = true;
                    inner.failed.get_or_insert(error);
                }
            }
            closed += found;
            if found == 0 {
                // The first round may only have cleared reference bits; a second finds nothing
                // only when every open handle is pinned, kept or busy.
                rounds_without_victim += 1;
                if rounds_without_victim == 2 {
                    break;
                }
            }
        }
    }

    /// One clock's pass of [`Pool::evict`]: takes up to `wanted` victims (less those found so
    /// far) into `victims`. With `dirty_clock` (the clean clock's pass) a dirty handle is moved
    /// there; without (the dirty clock's pass) it is taken, to be synced before it closes.
    fn sweep(
        clock: &mut VecDeque<Weak<Slot>>,
        mut dirty_clock: Option<&mut VecDeque<Weak<Slot>>>,
        wanted: usize,
        keep: Option<u64>,
        victims: &mut Vec<(Arc<Slot>, Arc<dyn File>, bool)>,
        upgraded: &mut Vec<Arc<Slot>>,
    ) {
        let mut budget = clock.len().saturating_mul(2).min(EVICTION_SCAN_MAX);
        while victims.len() < wanted && budget > 0 {
            let Some(weak) = clock.pop_front() else { break };
            let Some(slot) = weak.upgrade() else { continue };
            upgraded.push(Arc::clone(&slot));
            // Never wait for a handle in use: a busy one stays for the next sweep.
            let Ok(mut inner) = slot.inner.try_lock() else {
                budget -= 1;
                clock.push_back(weak);
                continue;
            };
            if inner.pinned || inner.file.is_none() {
                continue;
            }
            if inner.dirty
                && let Some(dirty_clock) = dirty_clock.as_deref_mut()
            {
                dirty_clock.push_back(weak);
                continue;
            }
            budget -= 1;
            if Some(slot.id) == keep || slot.referenced.swap(false, Ordering::Relaxed) {
                clock.push_back(weak);
                continue;
            }
            let dirty = inner.dirty;
            let Some(file) = inner.file.take() else { continue };
            if dirty {
                // Synced by the caller: what it holds is on disk once that returns.
                inner.dirty = false;
                inner.unsynced = false;
            }
            drop(inner);
            victims.push((slot, file, dirty));
        }
    }

    fn register(&self, slot: &Arc<Slot>, path: Arc<Path>) {
        self.lock().by_path.insert((path, slot.id), Arc::downgrade(slot));
    }

    /// The live handles' entries at `path` and, when `path` is a directory, under it (paths
    /// order by components, so these follow `path` in the map).
    fn entries_at_or_under<'a>(
        state: &'a PoolState,
        path: &'a Path,
    ) -> impl Iterator<Item = (&'a (Arc<Path>, u64), &'a Weak<Slot>)> {
        state
            .by_path
            .range((Arc::from(path), 0)..)
            .take_while(move |((p, _), _)| p.starts_with(path))
    }

    /// The keys of the live handles at `path` and under it.
    fn keys_at_or_under(state: &PoolState, path: &Path) -> Vec<(Arc<Path>, u64)> {
        Self::entries_at_or_under(state, path).map(|(key, _)| key.clone()).collect()
    }

    /// The live handles at `path` and under it.
    fn handles_at_or_under(state: &PoolState, path: &Path) -> Vec<Arc<Slot>> {
        Self::entries_at_or_under(state, path).filter_map(|(_, weak)| weak.upgrade()).collect()
    }

    /// Opens and pins the handles of `path` (and under it): their file is about to be removed
    /// or replaced.
    fn pin(&self, path: &Path) -> io::Result<()> {
        let slots = Self::handles_at_or_under(&self.lock(), path);
        for slot in slots {
            // An eviction may close it between the open and the pin: open it again then.
            loop {
                slot.open_file()?;
                let mut inner = lock(&slot.inner);
                if inner.file.is_some() {
                    inner.pinned = true;
                    break;
                }
            }
        }
        Ok(())
    }
}

impl Slot {
    /// The open file, opening it (within the budget) when it is closed; first the error of a
    /// failed eviction sync, if one waits.
    fn file(self: &Arc<Self>) -> io::Result<Arc<dyn File>> {
        if let Some(error) = lock(&self.inner).failed.take() {
            return Err(error);
        }
        self.open_file()
    }

    fn open_file(self: &Arc<Self>) -> io::Result<Arc<dyn File>> {
        self.referenced.store(true, Ordering::Relaxed);
        let path = {
            let inner = lock(&self.inner);
            if let Some(file) = &inner.file {
                return Ok(Arc::clone(file));
            }
            inner.path.clone()
        };
        // Opened without the handle's lock held: the pool's lock comes first everywhere (a
        // rename holds it while it updates the paths of handles).
        let opened: Arc<dyn File> =
            Arc::from(self.pool.open_inner(&path, self.reopen_mode, Some(self.id))?);
        let mut inner = lock(&self.inner);
        if let Some(file) = &inner.file {
            // Another call opened it meanwhile; ours closes here.
            let file = Arc::clone(file);
            drop(inner);
            let mut state = self.pool.lock();
            state.open_files = state.open_files.saturating_sub(1);
            return Ok(file);
        }
        inner.file = Some(Arc::clone(&opened));
        drop(inner);
        self.pool.admit(self);
        Ok(opened)
    }

    fn mark_dirty(&self) {
        let mut inner = lock(&self.inner);
        inner.dirty = true;
        inner.unsynced = true;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(PoisonError::into_inner);
        let had_file = inner.file.take().is_some();
        let orphaned = inner.dirty || inner.unsynced;
        let path = Arc::clone(&inner.path);
        let mut state = self.pool.lock();
        if orphaned {
            state.orphans.insert(path.to_path_buf());
        }
        if had_file {
            state.open_files = state.open_files.saturating_sub(1);
        }
        state.by_path.remove(&(path, self.id));
        state.note_dropped();
    }
}

/// A file opened through a [`BudgetFs`].
struct BudgetFile {
    slot: Arc<Slot>,
}

impl fmt::Debug for BudgetFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = lock(&self.slot.inner);
        f.debug_struct("BudgetFile")
            .field("path", &inner.path)
            .field("open", &inner.file.is_some())
            .finish_non_exhaustive()
    }
}

impl File for BudgetFile {
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()> {
        self.slot.file()?.read_exact_at(buf, position)
    }

    fn write_all_at(&self, bytes: &[u8], position: u64) -> io::Result<()> {
        let file = self.slot.file()?;
        self.slot.mark_dirty();
        file.write_all_at(bytes, position)
    }

    fn write_all_vectored_at(&self, parts: &[&[u8]], position: u64) -> io::Result<()> {
        let file = self.slot.file()?;
        self.slot.mark_dirty();
        file.write_all_vectored_at(parts, position)
    }

    fn send_at(&self, out: BorrowedFd<'_>, position: u64, len: usize) -> io::Result<usize> {
        self.slot.file()?.send_at(out, position, len)
    }

    fn len(&self) -> io::Result<u64> {
        self.slot.file()?.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        // Not dirty: a size change carries no data (an index's preallocation or trim), and
        // storage syncs every truncation it relies on before it returns.
        let file = self.slot.file()?;
        lock(&self.slot.inner).unsynced = true;
        file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        let path = {
            let state = self.slot.pool.lock();
            let mut inner = lock(&self.slot.inner);
            if let Some(error) = inner.failed.take() {
                return Err(error);
            }
            // Closed with nothing unsynced, and no dropped handle of the file left changes
            // behind: an eviction synced what it wrote (or it wrote nothing), so there is
            // nothing to reopen the file for. A clean restart's flush of every idle partition
            // costs no descriptor and no fsync this way.
            if inner.file.is_none() && !inner.unsynced && !state.orphans.contains(&*inner.path) {
                return Ok(());
            }
            inner.path.clone()
        };
        let file = self.slot.open_file()?;
        {
            // Cleared first: a write racing with this sync marks the handle again.
            let mut inner = lock(&self.slot.inner);
            inner.dirty = false;
            inner.unsynced = false;
        }
        let started = std::time::Instant::now();
        let synced = file.sync_data();
        self.slot.pool.fsync_latency.record(started.elapsed());
        synced.inspect_err(|_| self.slot.mark_dirty())?;
        self.slot.pool.lock().orphans.remove(&*path);
        Ok(())
    }

    fn modified_ms(&self) -> io::Result<i64> {
        self.slot.file()?.modified_ms()
    }

    fn set_modified_ms(&self, ms: i64) -> io::Result<()> {
        self.slot.file()?.set_modified_ms(ms)
    }
}

impl Fs for BudgetFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn File>> {
        // Opened now, so that NotFound and AlreadyExists come from this call.
        let file: Arc<dyn File> = Arc::from(self.pool.open_inner(path, mode, None)?);
        let shared_path: Arc<Path> = Arc::from(path);
        let slot = Arc::new(Slot {
            id: self.pool.next_id.fetch_add(1, Ordering::Relaxed),
            pool: Arc::clone(&self.pool),
            reopen_mode: if mode == OpenMode::Read { OpenMode::Read } else { OpenMode::ReadWrite },
            referenced: AtomicBool::new(true),
            inner: Mutex::new(SlotState {
                path: Arc::clone(&shared_path),
                file: Some(file),
                dirty: false,
                // A file this process did not write may hold another's unsynced writes (a
                // process that stopped without syncing them): its first sync must reach the disk.
                unsynced: mode != OpenMode::Read,
                pinned: false,
                failed: None,
            }),
        });
        self.pool.register(&slot, shared_path);
        self.pool.admit(&slot);
        Ok(Box::new(BudgetFile { slot }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        // What `to` names now is replaced: its handles keep their file.
        self.pool.pin(to)?;
        let mut upgraded: Vec<Arc<Slot>> = Vec::new();
        let mut state = self.pool.lock();
        self.pool.inner.rename(from, to)?;
        let moved = Pool::keys_at_or_under(&state, from);
        // Handles of one file share their new path, as they shared the old one.
        let mut renamed: Option<(Arc<Path>, Arc<Path>)> = None;
        for (old, id) in moved {
            let Some(weak) = state.by_path.remove(&(Arc::clone(&old), id)) else { continue };
            let new = match &renamed {
                Some((last_old, last_new)) if *last_old == old => Arc::clone(last_new),
                _ => {
                    let Ok(rest) = old.strip_prefix(from) else { continue };
                    let new: Arc<Path> = if rest.as_os_str().is_empty() {
                        Arc::from(to)
                    } else {
                        Arc::from(to.join(rest))
                    };
                    renamed = Some((Arc::clone(&old), Arc::clone(&new)));
                    new
                }
            };
            if let Some(slot) = weak.upgrade() {
                lock(&slot.inner).path = Arc::clone(&new);
                // Dropped after the pool's lock (see `Pool::evict`).
                upgraded.push(slot);
            }
            state.by_path.insert((new, id), weak);
        }
        let orphans: Vec<PathBuf> = state
            .orphans
            .range(from.to_path_buf()..)
            .take_while(|p| p.starts_with(from))
            .cloned()
            .collect();
        for old in orphans {
            state.orphans.remove(&old);
            if let Ok(rest) = old.strip_prefix(from) {
                let new =
                    if rest.as_os_str().is_empty() { to.to_path_buf() } else { to.join(rest) };
                state.orphans.insert(new);
            }
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.pool.pin(path)?;
        self.pool.inner.remove(path)?;
        self.pool.lock().orphans.remove(path);
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.pool.inner.list(dir)
    }

    fn list_dirs(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.pool.inner.list_dirs(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.pool.inner.create_dir_all(dir)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.pool.inner.remove_dir(dir)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.pool.inner.exists(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let started = std::time::Instant::now();
        let synced = self.pool.inner.sync_dir(dir);
        self.pool.fsync_latency.record(started.elapsed());
        match synced {
            Err(error) if is_descriptor_exhaustion(&error) => {
                self.pool.lock().emfile_retries += 1;
                self.pool.evict((self.pool.open_files_max / 4).max(1), None);
                self.pool.inner.sync_dir(dir)
            }
            other => other,
        }
    }

    fn lock_exclusive(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.pool.inner.lock_exclusive(path)
    }

    fn space(&self, path: &Path) -> io::Result<FsSpace> {
        self.pool.inner.space(path)
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
