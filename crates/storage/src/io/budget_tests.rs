//! Tests of `BudgetFs`: the budget holds, handles survive eviction, renames and removals, dirty
//! handles are synced before they are closed, and EMFILE is met by closing handles.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::io::{
    BudgetFs, FaultKind, FaultPlan, File, FileLock, Fs, FsSpace, OpenMode, SimFs, read_all,
};
use crate::testing::Rng;

/// An `Fs` that counts the files of its inner one that are alive (opened, not yet dropped), and
/// fails opens with EMFILE above `limit` as an operating system would.
#[derive(Debug, Clone)]
struct CountingFs {
    inner: SimFs,
    live: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    limit: Arc<Mutex<Option<usize>>>,
}

impl CountingFs {
    fn new(inner: SimFs) -> Self {
        Self { inner, live: Arc::default(), peak: Arc::default(), limit: Arc::default() }
    }
    fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }
    fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

#[derive(Debug)]
struct CountedFile {
    inner: Box<dyn File>,
    live: Arc<AtomicUsize>,
}

impl Drop for CountedFile {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

impl File for CountedFile {
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, position)
    }
    fn write_all_at(&self, bytes: &[u8], position: u64) -> io::Result<()> {
        self.inner.write_all_at(bytes, position)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn modified_ms(&self) -> io::Result<i64> {
        self.inner.modified_ms()
    }
    fn set_modified_ms(&self, ms: i64) -> io::Result<()> {
        self.inner.set_modified_ms(ms)
    }
}

impl Fs for CountingFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn File>> {
        if let Some(limit) = *self.limit.lock().unwrap()
            && self.live() >= limit
        {
            return Err(io::Error::from_raw_os_error(24));
        }
        let inner = self.inner.open(path, mode)?;
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        Ok(Box::new(CountedFile { inner, live: Arc::clone(&self.live) }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_dir(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn lock_exclusive(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.inner.lock_exclusive(path)
    }
    fn space(&self, path: &Path) -> io::Result<FsSpace> {
        self.inner.space(path)
    }
}

fn setup(budget: usize) -> (SimFs, CountingFs, BudgetFs) {
    let sim = SimFs::new();
    sim.create_dir_all(Path::new("/d")).unwrap();
    let counting = CountingFs::new(sim.clone());
    let fs = BudgetFs::new(Arc::new(counting.clone()), budget);
    (sim, counting, fs)
}

fn read(file: &dyn File) -> Vec<u8> {
    read_all(file).unwrap()
}

#[test]
fn many_files_through_a_small_budget_keep_their_bytes() {
    let (_sim, counting, fs) = setup(4);
    let files: Vec<Box<dyn File>> = (0..40)
        .map(|i| fs.open(&PathBuf::from(format!("/d/f{i}")), OpenMode::CreateNew).unwrap())
        .collect();
    for round in 0..3u8 {
        for (i, file) in files.iter().enumerate() {
            let byte = u8::try_from(i).unwrap().wrapping_mul(7).wrapping_add(round);
            file.write_all_at(&[byte; 10], u64::from(round) * 10).unwrap();
            assert!(counting.live() <= 4, "{} files open with a budget of 4", counting.live());
        }
    }
    for (i, file) in files.iter().enumerate() {
        let mut want = Vec::new();
        for round in 0..3u8 {
            want.extend([u8::try_from(i).unwrap().wrapping_mul(7).wrapping_add(round); 10]);
        }
        assert_eq!(read(file.as_ref()), want, "file {i}");
        assert_eq!(file.len().unwrap(), 30);
    }
    assert!(counting.peak() <= 4, "peak {} open with a budget of 4", counting.peak());
    let stats = fs.stats();
    assert_eq!(stats.handles, 40);
    assert!(stats.evictions >= 36 * 3, "{stats:?}");
    drop(files);
    assert_eq!(counting.live(), 0);
    assert_eq!(fs.stats().handles, 0);
    assert_eq!(fs.stats().open_files, 0);
}

/// A broker under its budget never evicts, so its clock is never swept: each file opened and
/// dropped (a checkpoint written, a segment deleted) must not leave an entry behind for good.
#[test]
fn handles_opened_and_dropped_under_the_budget_leave_no_clock_entries_behind() {
    let (_sim, counting, fs) = setup(64);
    let kept: Vec<Box<dyn File>> = (0..10)
        .map(|i| fs.open(&PathBuf::from(format!("/d/kept{i}")), OpenMode::CreateNew).unwrap())
        .collect();
    let mut clock_entries_max = 0;
    for i in 0..10_000 {
        let file =
            fs.open(&PathBuf::from(format!("/d/f{}", i % 7)), OpenMode::CreateOrOpen).unwrap();
        file.write_all_at(b"x", 0).unwrap();
        file.sync_data().unwrap();
        drop(file);
        clock_entries_max = clock_entries_max.max(fs.stats().clock_entries);
    }
    let stats = fs.stats();
    assert_eq!(stats.evictions, 0, "under the budget nothing is evicted: {stats:?}");
    assert_eq!(stats.handles, kept.len());
    assert!(
        clock_entries_max <= 2 * 64 + kept.len(),
        "the clocks held {clock_entries_max} entries for {} live handles after 10,000 opens",
        kept.len()
    );
    drop(kept);
    assert_eq!(counting.live(), 0);
}

#[test]
fn an_evicted_dirty_handle_is_synced_first_so_its_writes_survive_a_crash() {
    let (sim, _counting, fs) = setup(1);
    let a = fs.open(Path::new("/d/a"), OpenMode::CreateNew).unwrap();
    sim.sync_dir(Path::new("/")).unwrap();
    sim.sync_dir(Path::new("/d")).unwrap();
    a.write_all_at(b"acknowledged", 0).unwrap();
    // Opening b needs a's descriptor: a is dirty, the only candidate, and is synced.
    let b = fs.open(Path::new("/d/b"), OpenMode::CreateNew).unwrap();
    assert_eq!(fs.stats().dirty_evictions, 1);
    b.write_all_at(b"never synced", 0).unwrap();
    sim.crash(7);
    let after = sim.open(Path::new("/d/a"), OpenMode::Read).unwrap();
    assert_eq!(read(after.as_ref()), b"acknowledged");
}

#[test]
fn clean_handles_go_before_dirty_ones() {
    let (_sim, _counting, fs) = setup(2);
    let dirty = fs.open(Path::new("/d/dirty"), OpenMode::CreateNew).unwrap();
    dirty.write_all_at(b"x", 0).unwrap();
    let clean = fs.open(Path::new("/d/clean"), OpenMode::CreateNew).unwrap();
    clean.write_all_at(b"y", 0).unwrap();
    clean.sync_data().unwrap();
    for i in 0..10 {
        let other = fs.open(&PathBuf::from(format!("/d/o{i}")), OpenMode::CreateNew).unwrap();
        drop(other);
    }
    assert_eq!(fs.stats().dirty_evictions, 0, "{:?}", fs.stats());
    assert_eq!(read(dirty.as_ref()), b"x");
}

/// More dirty handles than one eviction pass looks at stand before the clean ones in the clock
/// (the active `.log`s of many partitions, written since their last sync, and behind them the
/// rolled segments the roll flush has synced): evictions still find the clean ones, and no
/// fsync runs inside an open.
#[test]
fn clean_handles_behind_many_dirty_ones_are_found_first() {
    // Over EVICTION_SCAN_MAX (256), so that one pass cannot look at every handle.
    const BUDGET: usize = 600;
    const DIRTY: usize = 500;
    let (_sim, counting, fs) = setup(BUDGET);
    let open = |name: String| fs.open(&PathBuf::from(name), OpenMode::CreateNew).unwrap();
    let mut handles = Vec::new();
    for i in 0..DIRTY {
        let log = open(format!("/d/{i}.log"));
        log.write_all_at(b"batch", 0).unwrap();
        handles.push(log);
    }
    for i in 0..BUDGET - DIRTY {
        let rolled = open(format!("/d/{i}.rolled"));
        rolled.write_all_at(b"batch", 0).unwrap();
        rolled.sync_data().unwrap();
        handles.push(rolled);
    }
    // The next segments' files: each open needs a descriptor of the budget.
    for i in 0..BUDGET - DIRTY {
        handles.push(open(format!("/d/{i}.index")));
    }
    let stats = fs.stats();
    assert_eq!(stats.evictions, (BUDGET - DIRTY) as u64, "{stats:?}");
    assert_eq!(stats.dirty_evictions, 0, "{stats:?}");
    assert!(counting.peak() <= BUDGET + 1, "{stats:?}");
    for (i, log) in handles.iter().take(DIRTY).enumerate() {
        assert_eq!(read(log.as_ref()), b"batch", "log {i}");
    }
}

#[test]
fn a_failed_eviction_sync_is_returned_by_the_next_call_of_its_handle() {
    let (sim, _counting, fs) = setup(1);
    let a = fs.open(Path::new("/d/a"), OpenMode::CreateNew).unwrap();
    a.write_all_at(b"data", 0).unwrap();
    // The next counted operation: a's sync as the open of b makes room for b.
    sim.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
    let _b = fs.open(Path::new("/d/b"), OpenMode::CreateNew).unwrap();
    let error = a.read_exact_at(&mut [0; 4], 0).unwrap_err();
    assert_eq!(error.raw_os_error(), Some(5), "{error}");
    // Still dirty: the owner's own sync syncs it.
    a.sync_data().unwrap();
    sim.sync_dir(Path::new("/")).unwrap();
    sim.sync_dir(Path::new("/d")).unwrap();
    sim.crash(1);
    let after = sim.open(Path::new("/d/a"), OpenMode::Read).unwrap();
    assert_eq!(read(after.as_ref()), b"data");
}

#[test]
fn handles_follow_renamed_files_and_directories() {
    let (_sim, _counting, fs) = setup(1);
    fs.create_dir_all(Path::new("/d/t-0")).unwrap();
    let log = fs.open(Path::new("/d/t-0/0.log"), OpenMode::CreateNew).unwrap();
    log.write_all_at(b"segment", 0).unwrap();
    let other = fs.open(Path::new("/d/other"), OpenMode::CreateNew).unwrap();
    other.write_all_at(b"o", 0).unwrap();
    // log is closed now (budget 1); rename the file, then its directory.
    fs.rename(Path::new("/d/t-0/0.log"), Path::new("/d/t-0/0.log.deleted")).unwrap();
    other.sync_data().unwrap();
    fs.rename(Path::new("/d/t-0"), Path::new("/d/t-0.abc-delete")).unwrap();
    assert_eq!(read(log.as_ref()), b"segment");
    log.write_all_at(b"!", 7).unwrap();
    let direct = fs.open(Path::new("/d/t-0.abc-delete/0.log.deleted"), OpenMode::Read).unwrap();
    assert_eq!(read(direct.as_ref()), b"segment!");
}

#[test]
fn removed_and_replaced_files_stay_readable_through_their_handles() {
    let (_sim, counting, fs) = setup(1);
    let removed = fs.open(Path::new("/d/removed"), OpenMode::CreateNew).unwrap();
    removed.write_all_at(b"old segment", 0).unwrap();
    let replaced = fs.open(Path::new("/d/target"), OpenMode::CreateNew).unwrap();
    replaced.write_all_at(b"before swap", 0).unwrap();
    let swap = fs.open(Path::new("/d/target.swap"), OpenMode::CreateNew).unwrap();
    swap.write_all_at(b"after swap", 0).unwrap();
    fs.remove(Path::new("/d/removed")).unwrap();
    fs.rename(Path::new("/d/target.swap"), Path::new("/d/target")).unwrap();
    // Churn the budget: the pinned handles keep their descriptors.
    for i in 0..5 {
        drop(fs.open(&PathBuf::from(format!("/d/c{i}")), OpenMode::CreateNew).unwrap());
    }
    assert_eq!(read(removed.as_ref()), b"old segment");
    assert_eq!(read(replaced.as_ref()), b"before swap");
    assert_eq!(read(swap.as_ref()), b"after swap");
    let by_path = fs.open(Path::new("/d/target"), OpenMode::Read).unwrap();
    assert_eq!(read(by_path.as_ref()), b"after swap");
    drop((removed, replaced));
    drop((swap, by_path));
    assert_eq!(counting.live(), 0);
}

#[test]
fn emfile_is_met_by_closing_handles() {
    let (_sim, counting, fs) = setup(100);
    // The process limit is lower than the budget: opens past it fail with EMFILE.
    *counting.limit.lock().unwrap() = Some(8);
    let files: Vec<Box<dyn File>> = (0..30)
        .map(|i| fs.open(&PathBuf::from(format!("/d/f{i}")), OpenMode::CreateNew).unwrap())
        .collect();
    for (i, file) in files.iter().enumerate() {
        file.write_all_at(&[u8::try_from(i).unwrap()], 0).unwrap();
        file.sync_data().unwrap();
    }
    for (i, file) in files.iter().enumerate() {
        assert_eq!(read(file.as_ref()), [u8::try_from(i).unwrap()]);
    }
    assert!(counting.peak() <= 8);
    assert!(fs.stats().emfile_retries > 0, "{:?}", fs.stats());
}

#[test]
fn concurrent_writers_and_readers_under_a_budget_of_three() {
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20_261_201);
    let (_sim, counting, fs) = setup(3);
    let files: Arc<Vec<Box<dyn File>>> = Arc::new(
        (0..12)
            .map(|i| fs.open(&PathBuf::from(format!("/d/f{i}")), OpenMode::CreateNew).unwrap())
            .collect(),
    );
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let files = Arc::clone(&files);
            std::thread::spawn(move || {
                let mut rng = Rng(seed ^ t);
                // Thread t owns files t, t+4, t+8: it appends one byte at a time and reads back.
                let mine: Vec<usize> =
                    (0..3).map(|k| usize::try_from(t).unwrap() + 4 * k).collect();
                let mut lens = [0u64; 3];
                for step in 0..300u64 {
                    let k = usize::try_from(rng.below(3)).unwrap();
                    let file = &files[mine[k]];
                    let byte = u8::try_from((step + t) % 251).unwrap();
                    file.write_all_at(&[byte], lens[k]).unwrap();
                    lens[k] += 1;
                    let mut got = [0u8];
                    file.read_exact_at(&mut got, lens[k] - 1).unwrap();
                    assert_eq!(got[0], byte, "seed {seed} thread {t} step {step}");
                    if rng.below(10) == 0 {
                        file.sync_data().unwrap();
                    }
                    // Someone else's file, read only.
                    let other = &files[usize::try_from(rng.below(12)).unwrap()];
                    other.len().unwrap();
                }
                lens
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    // Budget 3 plus at most one call in flight per thread.
    assert!(counting.peak() <= 3 + 4, "peak {} (seed {seed})", counting.peak());
}

#[test]
fn a_truncation_synced_after_its_handle_was_evicted_is_durable() {
    // An unsynced truncation survives a crash or not (a coin per crash seed): 8 seeds, each on
    // a fresh file system, so that a sync skipped by mistake shows.
    for seed in 0..8 {
        let (sim, _counting, fs) = setup(1);
        sim.sync_dir(Path::new("/")).unwrap();
        let a = fs.open(Path::new("/d/a"), OpenMode::CreateNew).unwrap();
        sim.sync_dir(Path::new("/d")).unwrap();
        a.write_all_at(b"0123456789", 0).unwrap();
        a.sync_data().unwrap();
        a.set_len(4).unwrap();
        // a is closed without a sync (a resize is not dirty data)...
        let _b = fs.open(Path::new("/d/b"), OpenMode::CreateNew).unwrap();
        assert_eq!(fs.stats().dirty_evictions, 0);
        // ...and its owner's sync still reaches the disk.
        a.sync_data().unwrap();
        sim.crash(seed);
        let after = sim.open(Path::new("/d/a"), OpenMode::Read).unwrap();
        assert_eq!(read(after.as_ref()), b"0123", "seed {seed}");
    }
}

#[test]
fn syncing_a_closed_clean_handle_opens_nothing() {
    let (_sim, counting, fs) = setup(2);
    let files: Vec<Box<dyn File>> = (0..10)
        .map(|i| fs.open(&PathBuf::from(format!("/d/f{i}")), OpenMode::CreateNew).unwrap())
        .collect();
    // The first sync of each reaches the disk (a new handle may hold an earlier process's
    // writes); after it, the eight closed ones are not reopened.
    for file in &files {
        file.sync_data().unwrap();
    }
    let opens = fs.stats().opens;
    for file in &files {
        file.sync_data().unwrap();
    }
    assert_eq!(fs.stats().opens, opens);
    assert!(counting.live() <= 2);
}

#[test]
fn writes_left_unsynced_by_a_dropped_handle_or_an_earlier_process_are_synced_by_the_next() {
    for seed in 0..8 {
        let (sim, _counting, fs) = setup(1);
        sim.sync_dir(Path::new("/")).unwrap();
        let first = fs.open(Path::new("/d/a"), OpenMode::CreateNew).unwrap();
        sim.sync_dir(Path::new("/d")).unwrap();
        let second = fs.open(Path::new("/d/a"), OpenMode::ReadWrite).unwrap();
        second.sync_data().unwrap();
        // Written through `first`, which is dropped unsynced (an orphan)...
        first.write_all_at(b"orphan", 0).unwrap();
        drop(first);
        // ...and `second`, synced and closed since, must still sync for it.
        drop(fs.open(Path::new("/d/b"), OpenMode::CreateNew).unwrap());
        second.sync_data().unwrap();
        drop(second);
        // An earlier process's unsynced write, seen by a new BudgetFs's first handle.
        let earlier = sim.open(Path::new("/d/b"), OpenMode::ReadWrite).unwrap();
        earlier.write_all_at(b"earlier", 0).unwrap();
        drop(earlier);
        let next = BudgetFs::new(Arc::new(sim.clone()), 1);
        let b = next.open(Path::new("/d/b"), OpenMode::ReadWrite).unwrap();
        drop(next.open(Path::new("/d/c"), OpenMode::CreateNew).unwrap());
        b.sync_data().unwrap();
        sim.sync_dir(Path::new("/d")).unwrap();
        sim.crash(seed);
        for (path, want) in [("/d/a", &b"orphan"[..]), ("/d/b", &b"earlier"[..])] {
            let after = sim.open(Path::new(path), OpenMode::Read).unwrap();
            assert_eq!(read(after.as_ref()), want, "{path}, seed {seed}");
        }
    }
}
