//! `SimFs`: an in-memory, deterministic file system that simulates power loss and injects faults.
//!
//! # What is modelled
//!
//! The namespace is a tree of directories holding files and directories, both referred to by id
//! (an inode number), so open handles follow a file across `rename` and keep working after
//! `remove`, as on Unix. Paths are split into components; `/a/b` and `a/b` name the same entry
//! and `..` is rejected.
//!
//! **File contents.** Each file has *live* bytes (what reads see) and *durable* bytes (the live
//! bytes as of its last [`File::sync_data`]). Writes past the end zero-fill any gap. Each file
//! also has a last-modified time: creation, a write and a `set_len` that changes the length set
//! it to the manual clock ([`SimFs::set_now_ms`]); `set_modified_ms` sets it directly; it is
//! durable as of the last `sync_data`. SimFs never reads the wall clock.
//!
//! **Directories.** Each directory has *live* entries and *durable* entries (the live entries as
//! of its last [`Fs::sync_dir`]). Every directory change (creating a file or directory, `rename`,
//! `remove`, `remove_dir`) is also kept, in order, in a list of *pending changes*, each made of
//! one or two parts (a rename is an unlink from one directory and a link into another). `sync_dir`
//! of a directory makes its current entries durable and drops the parts of pending changes that
//! touch it; a rename across two directories is durable only once both are synced.
//!
//! **Crash** ([`SimFs::crash`], seeded, deterministic for a given seed and history):
//! 1. Each pending change independently survives or not (a fair coin). Starting from the durable
//!    entries, the surviving changes are replayed in their original order; a change is atomic
//!    (both halves of a rename, or neither) and is skipped if it no longer applies (its source
//!    is gone, the name it creates is taken, or a directory it would remove or replace is not
//!    empty), since it could not have happened without the changes that did not survive.
//! 2. Files and directories no longer reachable from the root are dropped.
//! 3. Each remaining file gets, starting from its durable bytes:
//!    - in the range where both the durable and the live bytes exist, each 512-byte sector
//!      (aligned to the file start) that differs independently keeps its old or its new bytes;
//!    - if the live file is longer, a prefix of the unsynced tail: the new length is chosen
//!      uniformly among the durable length, each multiple of 512 between it and the live length,
//!      and the live length;
//!    - if the live file is shorter (an unsynced truncation), either the live length or the
//!      durable length with the durable bytes past the live length (a coin).
//! 4. Afterwards live equals durable everywhere, no change is pending, each file's modified time
//!    is its durable one, and every handle opened before the crash fails with `ESTALE`.
//!
//! Not modelled: a file length that survives without its data (zeros or garbage in the tail, as
//! with ext4 `data=writeback`), torn writes inside a sector, bit rot, fsync failures that drop
//! dirty data (a failed `sync_data` here simply leaves the file unsynced), and metadata journals
//! that persist changes in order (this model is more adversarial: any subset survives).
//!
//! # Faults
//!
//! Every call of an [`Fs`] or [`File`] method is one counted operation ([`SimFs::op_count`]),
//! whether it succeeds or fails. A [`FaultPlan`] makes chosen operations fail before they change
//! anything, except [`FaultKind::ShortWrite`], which writes a prefix and then fails. An optional
//! capacity ([`SimFs::set_capacity_bytes`]) makes writes and `set_len` calls that would grow the
//! total live bytes of all files beyond it fail with `ENOSPC`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{File, FileLock, Fs, FsSpace, OpenMode};
use crate::testing::Rng;

const ENOENT: i32 = 2;
const EIO: i32 = 5;
const EBADF: i32 = 9;
const EBUSY: i32 = 16;
const EEXIST: i32 = 17;
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;
const EINVAL: i32 = 22;
const ENOSPC: i32 = 28;
const ENOTEMPTY: i32 = 39;
const ESTALE: i32 = 116;

fn os_error(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// The error a fault plan injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// `EIO`; applies to every operation.
    Eio,
    /// `ENOSPC`; applies only to `write_all_at` and to `set_len` that grows a file.
    Enospc,
    /// A torn write: applies only to `write_all_at`, which writes a prefix of its bytes and then
    /// fails with `EIO`. Under [`FaultPlan::FailNth`] the prefix is the first half (rounded
    /// down); under [`FaultPlan::Probability`] its length is drawn uniformly from `0..len`.
    ShortWrite,
}

impl FaultKind {
    fn applies_to(self, class: OpClass) -> bool {
        match self {
            FaultKind::Eio => true,
            FaultKind::Enospc => matches!(class, OpClass::Write { .. } | OpClass::Grow),
            FaultKind::ShortWrite => matches!(class, OpClass::Write { .. }),
        }
    }
}

/// Which operations [`SimFs`] makes fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FaultPlan {
    /// Nothing fails (but the capacity, if set, still applies).
    #[default]
    None,
    /// The `n`-th counted operation from now fails (`n = 1` is the next one; `0` is treated as
    /// `1`), once; the plan then becomes [`FaultPlan::None`]. If `kind` does not apply to that
    /// operation, the first later operation it applies to fails instead.
    FailNth { n: u64, kind: FaultKind },
    /// Each operation that `kind` applies to fails with probability `per_million / 1_000_000`,
    /// drawn from a PRNG seeded with `seed`, so a run is reproducible.
    Probability { per_million: u32, seed: u64, kind: FaultKind },
}

/// What kind of operation is being counted, for deciding which faults apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpClass {
    /// `write_all_at` of `len` bytes.
    Write { len: usize },
    /// `set_len` that grows the file.
    Grow,
    /// Everything else.
    Other,
}

/// What a fault plan does to the current operation.
#[derive(Debug)]
enum Injected {
    Nothing,
    Fail(io::Error),
    ShortWrite { prefix_bytes: usize },
}

#[derive(Debug, Clone)]
enum ActiveFault {
    None,
    Nth { fail_at_op: u64, kind: FaultKind },
    Probability { per_million: u32, rng: Rng, kind: FaultKind },
}

type Ino = u64;
type DirId = u64;

const ROOT: DirId = 0;

/// What a directory entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Node {
    File(Ino),
    Dir(DirId),
}

#[derive(Debug, Default)]
struct Dir {
    live: BTreeMap<OsString, Node>,
    durable: BTreeMap<OsString, Node>,
}

#[derive(Debug)]
struct Inode {
    live: Vec<u8>,
    durable: Vec<u8>,
    /// The lowest byte position where live and durable may differ; `None` when they are equal.
    /// Invariant: `live[..from] == durable[..from]` and `from <= min(live.len(), durable.len())`.
    dirty_from: Option<usize>,
    modified_ms: i64,
    durable_modified_ms: i64,
    /// Live directory entries naming this file.
    live_links: u32,
    /// Handles open in the current epoch.
    open_handles: u32,
}

impl Inode {
    fn new(now_ms: i64) -> Self {
        Self {
            live: Vec::new(),
            durable: Vec::new(),
            dirty_from: None,
            modified_ms: now_ms,
            durable_modified_ms: now_ms,
            live_links: 0,
            open_handles: 0,
        }
    }

    fn mark_dirty(&mut self, position: usize) {
        self.dirty_from = Some(self.dirty_from.map_or(position, |from| from.min(position)));
    }

    /// The bytes this file holds after a power loss (step 3 of the crash model).
    fn crash_bytes(&self, rng: &mut Rng) -> Vec<u8> {
        const SECTOR: usize = SimFs::SECTOR_BYTES;
        let (old, new) = (&self.durable, &self.live);
        if self.dirty_from.is_none() {
            return old.clone();
        }
        let overlap = old.len().min(new.len());
        let mut bytes = old[..overlap].to_vec();
        for start in (0..overlap).step_by(SECTOR) {
            let end = (start + SECTOR).min(overlap);
            if old[start..end] != new[start..end] && rng.coin() {
                bytes[start..end].copy_from_slice(&new[start..end]);
            }
        }
        if new.len() > old.len() {
            // Cut points: old.len(), the multiples of SECTOR strictly between, new.len().
            let first_multiple = old.len() / SECTOR + 1;
            let last_multiple = (new.len() - 1) / SECTOR;
            let n_between = (last_multiple + 1).saturating_sub(first_multiple);
            let n_cuts = n_between + 2;
            let cut_idx = rng.below(n_cuts as u64) as usize;
            let cut = match cut_idx {
                0 => old.len(),
                idx if idx == n_cuts - 1 => new.len(),
                idx => (first_multiple + idx - 1) * SECTOR,
            };
            bytes.extend_from_slice(&new[old.len()..cut]);
        } else if new.len() < old.len() && rng.coin() {
            bytes.extend_from_slice(&old[new.len()..]);
        }
        bytes
    }
}

/// One part of a directory change.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DirOp {
    /// `name` in `dir` now names `node`. With `replace`, an existing compatible entry (a file,
    /// or an empty directory when `node` is a directory) is replaced, as by `rename`; without,
    /// the name must be free, as for a creation.
    Link { dir: DirId, name: OsString, node: Node, replace: bool },
    /// `name` in `dir`, which named `node`, is removed; a directory must be empty.
    Unlink { dir: DirId, name: OsString, node: Node },
}

impl DirOp {
    fn dir(&self) -> DirId {
        match self {
            DirOp::Link { dir, .. } | DirOp::Unlink { dir, .. } => *dir,
        }
    }

    fn node(&self) -> Node {
        match self {
            DirOp::Link { node, .. } | DirOp::Unlink { node, .. } => *node,
        }
    }

    /// Whether this part can be applied to `entries` (the directories during crash replay).
    fn applies(&self, entries: &BTreeMap<DirId, BTreeMap<OsString, Node>>) -> bool {
        let is_empty_dir = |id: DirId| entries.get(&id).is_none_or(BTreeMap::is_empty);
        let Some(dir) = entries.get(&self.dir()) else { return false };
        match self {
            DirOp::Link { name, node, replace, .. } => match dir.get(name) {
                None => true,
                Some(existing) => {
                    *replace
                        && (existing == node
                            || match (existing, node) {
                                (Node::File(_), Node::File(_)) => true,
                                (Node::Dir(existing), Node::Dir(_)) => is_empty_dir(*existing),
                                (Node::File(_), Node::Dir(_)) | (Node::Dir(_), Node::File(_)) => {
                                    false
                                }
                            })
                }
            },
            DirOp::Unlink { name, node, .. } => {
                dir.get(name) == Some(node)
                    && match node {
                        Node::File(_) => true,
                        Node::Dir(id) => is_empty_dir(*id),
                    }
            }
        }
    }

    fn apply(&self, entries: &mut BTreeMap<DirId, BTreeMap<OsString, Node>>) {
        let dir = entries.entry(self.dir()).or_default();
        match self {
            DirOp::Link { name, node, .. } => {
                dir.insert(name.clone(), *node);
            }
            DirOp::Unlink { name, .. } => {
                dir.remove(name);
            }
        }
    }
}

/// One directory change, atomic on crash: all of its parts survive or none does.
#[derive(Debug, Clone)]
struct Change {
    parts: Vec<DirOp>,
}

#[derive(Debug)]
struct State {
    inodes: BTreeMap<Ino, Inode>,
    dirs: BTreeMap<DirId, Dir>,
    /// Directory changes not yet durable, oldest first.
    pending: Vec<Change>,
    next_id: u64,
    fault: ActiveFault,
    op_count: u64,
    capacity_bytes: Option<u64>,
    now_ms: i64,
    /// Bumped by each crash; handles from an older epoch are stale.
    epoch: u64,
}

/// The entry names of `path`, in order.
fn components(path: &Path) -> io::Result<Vec<&OsStr>> {
    let mut names = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return Err(os_error(EINVAL)),
        }
    }
    Ok(names)
}

impl State {
    fn new() -> Self {
        let mut dirs = BTreeMap::new();
        dirs.insert(ROOT, Dir::default());
        Self {
            inodes: BTreeMap::new(),
            dirs,
            pending: Vec::new(),
            next_id: ROOT + 1,
            fault: ActiveFault::None,
            op_count: 0,
            capacity_bytes: None,
            now_ms: 0,
            epoch: 0,
        }
    }

    fn dir(&self, id: DirId) -> &Dir {
        self.dirs.get(&id).expect("every reachable directory id is in the map")
    }

    fn dir_mut(&mut self, id: DirId) -> &mut Dir {
        self.dirs.get_mut(&id).expect("every reachable directory id is in the map")
    }

    fn inode_mut(&mut self, ino: Ino) -> &mut Inode {
        self.inodes.get_mut(&ino).expect("a linked or open file is in the map")
    }

    fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Counts one operation and decides whether the fault plan makes it fail.
    fn tick(&mut self, class: OpClass) -> Injected {
        self.op_count += 1;
        let (kind, prefix_bytes) = match &mut self.fault {
            ActiveFault::None => return Injected::Nothing,
            ActiveFault::Nth { fail_at_op, kind } => {
                if self.op_count < *fail_at_op || !kind.applies_to(class) {
                    return Injected::Nothing;
                }
                let kind = *kind;
                self.fault = ActiveFault::None;
                let prefix_bytes = match class {
                    OpClass::Write { len } => len / 2,
                    OpClass::Grow | OpClass::Other => 0,
                };
                (kind, prefix_bytes)
            }
            ActiveFault::Probability { per_million, rng, kind } => {
                if !kind.applies_to(class) || rng.below(1_000_000) >= u64::from(*per_million) {
                    return Injected::Nothing;
                }
                let prefix_bytes = match class {
                    OpClass::Write { len } if len > 0 => rng.below(len as u64) as usize,
                    OpClass::Write { .. } | OpClass::Grow | OpClass::Other => 0,
                };
                (*kind, prefix_bytes)
            }
        };
        match kind {
            FaultKind::Eio => Injected::Fail(os_error(EIO)),
            FaultKind::Enospc => Injected::Fail(os_error(ENOSPC)),
            FaultKind::ShortWrite => Injected::ShortWrite { prefix_bytes },
        }
    }

    /// Counts an operation to which only `EIO` can apply, failing it if the plan says so.
    fn tick_other(&mut self) -> io::Result<()> {
        match self.tick(OpClass::Other) {
            Injected::Nothing => Ok(()),
            Injected::Fail(error) => Err(error),
            Injected::ShortWrite { .. } => unreachable!("short writes apply only to writes"),
        }
    }

    /// The live entry at `path`: `Ok(None)` if its parent exists but it does not.
    fn lookup(&self, path: &Path) -> io::Result<Option<Node>> {
        let names = components(path)?;
        let mut current = ROOT;
        for (name_idx, name) in names.iter().enumerate() {
            let is_last = name_idx + 1 == names.len();
            match (self.dir(current).live.get(*name), is_last) {
                (None, true) => return Ok(None),
                (None, false) => return Err(os_error(ENOENT)),
                (Some(Node::Dir(id)), _) => current = *id,
                (Some(node @ Node::File(_)), true) => return Ok(Some(*node)),
                (Some(Node::File(_)), false) => return Err(os_error(ENOTDIR)),
            }
        }
        Ok(Some(Node::Dir(current)))
    }

    fn resolve_dir(&self, path: &Path) -> io::Result<DirId> {
        match self.lookup(path)? {
            Some(Node::Dir(id)) => Ok(id),
            Some(Node::File(_)) => Err(os_error(ENOTDIR)),
            None => Err(os_error(ENOENT)),
        }
    }

    /// The live parent directory of `path` and the entry name in it.
    fn parent_and_name(&self, path: &Path) -> io::Result<(DirId, OsString)> {
        let names = components(path)?;
        let Some((name, parent_names)) = names.split_last() else {
            return Err(os_error(EBUSY));
        };
        let parent: PathBuf = parent_names.iter().collect();
        Ok((self.resolve_dir(&parent)?, (*name).to_os_string()))
    }

    fn link(&mut self, dir: DirId, name: OsString, node: Node) {
        if let Node::File(ino) = node {
            self.inode_mut(ino).live_links += 1;
        }
        let previous = self.dir_mut(dir).live.insert(name, node);
        assert!(previous.is_none(), "link over an existing entry");
    }

    fn unlink(&mut self, dir: DirId, name: &OsStr) -> Node {
        let node = self.dir_mut(dir).live.remove(name).expect("unlink of an existing entry");
        if let Node::File(ino) = node {
            let inode = self.inode_mut(ino);
            assert!(inode.live_links > 0, "live link count underflow");
            inode.live_links -= 1;
        }
        node
    }

    /// Total live bytes of the files that still take space (linked or open).
    fn used_bytes(&self) -> u64 {
        self.inodes
            .values()
            .filter(|inode| inode.live_links > 0 || inode.open_handles > 0)
            .map(|inode| inode.live.len() as u64)
            .sum()
    }

    /// Fails with `ENOSPC` if growing a file by `growth_bytes` exceeds the capacity.
    fn check_capacity(&self, growth_bytes: u64) -> io::Result<()> {
        match self.capacity_bytes {
            Some(capacity) if growth_bytes > 0 && self.used_bytes() + growth_bytes > capacity => {
                Err(os_error(ENOSPC))
            }
            _ => Ok(()),
        }
    }

    fn handle_inode(&mut self, handle: &SimFile) -> io::Result<&mut Inode> {
        if handle.epoch != self.epoch {
            return Err(os_error(ESTALE));
        }
        Ok(self.inode_mut(handle.ino))
    }

    fn write(&mut self, ino: Ino, bytes: &[u8], position: u64) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let start = usize::try_from(position).map_err(|_| os_error(EINVAL))?;
        let end = start.checked_add(bytes.len()).ok_or_else(|| os_error(EINVAL))?;
        let old_len = self.inodes.get(&ino).map_or(0, |inode| inode.live.len());
        self.check_capacity(end.saturating_sub(old_len) as u64)?;
        let now_ms = self.now_ms;
        let inode = self.inode_mut(ino);
        if end > old_len {
            inode.live.resize(end, 0);
        }
        inode.live[start..end].copy_from_slice(bytes);
        inode.mark_dirty(start.min(old_len));
        inode.modified_ms = now_ms;
        Ok(())
    }

    /// Drops files that nothing can reach any more: no live link, no open handle, no durable
    /// entry and no pending change names them.
    fn collect_garbage(&mut self) {
        let mut needed = BTreeSet::new();
        for dir in self.dirs.values() {
            needed.extend(dir.durable.values().copied());
        }
        for change in &self.pending {
            needed.extend(change.parts.iter().map(DirOp::node));
        }
        self.inodes.retain(|ino, inode| {
            inode.live_links > 0 || inode.open_handles > 0 || needed.contains(&Node::File(*ino))
        });
    }

    fn crash(&mut self, seed: u64) {
        let mut rng = Rng(seed);

        // 1. Replay the surviving pending changes over the durable entries.
        let mut entries: BTreeMap<DirId, BTreeMap<OsString, Node>> =
            self.dirs.iter().map(|(id, dir)| (*id, dir.durable.clone())).collect();
        for change in std::mem::take(&mut self.pending) {
            if rng.coin() && change.parts.iter().all(|part| part.applies(&entries)) {
                for part in &change.parts {
                    part.apply(&mut entries);
                }
            }
        }

        // 2. Keep what is reachable from the root.
        let mut reachable_dirs = BTreeSet::from([ROOT]);
        let mut reachable_inodes = BTreeSet::new();
        let mut to_visit = vec![ROOT];
        while let Some(id) = to_visit.pop() {
            for node in entries.get(&id).into_iter().flat_map(BTreeMap::values) {
                match *node {
                    Node::Dir(child) => {
                        if reachable_dirs.insert(child) {
                            to_visit.push(child);
                        }
                    }
                    Node::File(ino) => {
                        reachable_inodes.insert(ino);
                    }
                }
            }
        }
        entries.retain(|id, _| reachable_dirs.contains(id));
        self.dirs = entries
            .into_iter()
            .map(|(id, dir_entries)| (id, Dir { live: dir_entries.clone(), durable: dir_entries }))
            .collect();
        self.inodes.retain(|ino, _| reachable_inodes.contains(ino));

        // 3. Tear each file's unsynced bytes.
        for inode in self.inodes.values_mut() {
            let bytes = inode.crash_bytes(&mut rng);
            inode.live.clone_from(&bytes);
            inode.durable = bytes;
            inode.dirty_from = None;
            inode.modified_ms = inode.durable_modified_ms;
            inode.live_links = 0;
            inode.open_handles = 0;
        }
        let links: Vec<Ino> = self
            .dirs
            .values()
            .flat_map(|dir| dir.live.values())
            .filter_map(|node| match node {
                Node::File(ino) => Some(*ino),
                Node::Dir(_) => None,
            })
            .collect();
        for ino in links {
            self.inode_mut(ino).live_links += 1;
        }

        // 4. Every earlier handle is stale.
        self.epoch += 1;
    }
}

/// An in-memory file system with power-loss simulation and fault injection, for tests and
/// deterministic simulation (see the module docs for exactly what is modelled).
///
/// Cloning is cheap and shares the file system, so a test can keep a handle for crashes and
/// fault plans while the code under test holds it as an `Arc<dyn Fs>`.
#[derive(Clone)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
    /// Paths held by [`Fs::lock_exclusive`]; a lock is process state, so a crash does not keep it.
    locks: Arc<Mutex<BTreeSet<PathBuf>>>,
}

/// A lock held on a [`SimFs`] path.
#[derive(Debug)]
struct SimFileLock {
    locks: Arc<Mutex<BTreeSet<PathBuf>>>,
    path: PathBuf,
}

impl FileLock for SimFileLock {}

impl Drop for SimFileLock {
    fn drop(&mut self) {
        self.locks.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.path);
    }
}

impl fmt::Debug for SimFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFs").finish_non_exhaustive()
    }
}

impl Default for SimFs {
    fn default() -> Self {
        Self::new()
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A test that panicked while holding the lock leaves a consistent state behind: every
    // mutation completes before any call that could panic.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SimFs {
    /// The unit of atomicity on crash: unsynced bytes survive or not a whole sector at a time.
    pub const SECTOR_BYTES: usize = 512;

    /// An empty file system holding only the root directory, with no fault plan, no capacity
    /// limit and the clock at 0.
    pub fn new() -> Self {
        Self { state: Arc::new(Mutex::new(State::new())), locks: Arc::default() }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Replaces the fault plan; [`FaultPlan::FailNth`] counts from the next operation.
    pub fn set_fault_plan(&self, plan: FaultPlan) {
        let mut state = self.lock();
        state.fault = match plan {
            FaultPlan::None => ActiveFault::None,
            FaultPlan::FailNth { n, kind } => {
                ActiveFault::Nth { fail_at_op: state.op_count + n.max(1), kind }
            }
            FaultPlan::Probability { per_million, seed, kind } => {
                ActiveFault::Probability { per_million, rng: Rng(seed), kind }
            }
        };
    }

    /// How many [`Fs`] and [`File`] calls have been made so far, failed ones included.
    pub fn op_count(&self) -> u64 {
        self.lock().op_count
    }

    /// Limits the total live bytes of all files; `None` removes the limit.
    pub fn set_capacity_bytes(&self, capacity_bytes: Option<u64>) {
        self.lock().capacity_bytes = capacity_bytes;
    }

    /// The total live bytes of all files that take space (linked in a directory or still open).
    pub fn used_bytes(&self) -> u64 {
        self.lock().used_bytes()
    }

    /// Sets the clock that file modification times are taken from.
    pub fn set_now_ms(&self, now_ms: i64) {
        self.lock().now_ms = now_ms;
    }

    /// Simulates a power loss and reboot, as the module docs describe; deterministic for a given
    /// `seed` and history. The fault plan, capacity and clock are left as they are.
    pub fn crash(&self, seed: u64) {
        self.lock().crash(seed);
    }
}

impl Fs for SimFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn File>> {
        let mut state = self.lock();
        state.tick_other()?;
        let ino = match (state.lookup(path)?, mode) {
            (Some(_), OpenMode::CreateNew) => return Err(os_error(EEXIST)),
            (Some(Node::Dir(_)), _) => return Err(os_error(EISDIR)),
            (Some(Node::File(ino)), _) => ino,
            (None, OpenMode::Read | OpenMode::ReadWrite) => return Err(os_error(ENOENT)),
            (None, OpenMode::CreateNew | OpenMode::CreateOrOpen) => {
                let (dir, name) = state.parent_and_name(path)?;
                let ino = state.new_id();
                let now_ms = state.now_ms;
                state.inodes.insert(ino, Inode::new(now_ms));
                state.link(dir, name.clone(), Node::File(ino));
                let node = Node::File(ino);
                state
                    .pending
                    .push(Change { parts: vec![DirOp::Link { dir, name, node, replace: false }] });
                ino
            }
        };
        state.inode_mut(ino).open_handles += 1;
        Ok(Box::new(SimFile {
            state: Arc::clone(&self.state),
            ino,
            writable: mode != OpenMode::Read,
            epoch: state.epoch,
            path: path.to_path_buf(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.tick_other()?;
        let (from_dir, from_name) = state.parent_and_name(from)?;
        let node = *state.dir(from_dir).live.get(&from_name).ok_or_else(|| os_error(ENOENT))?;
        let (to_dir, to_name) = state.parent_and_name(to)?;
        if let Node::Dir(_) = node {
            let (from_names, to_names) = (components(from)?, components(to)?);
            if to_names.len() > from_names.len() && to_names.starts_with(&from_names) {
                return Err(os_error(EINVAL));
            }
        }
        let target = state.dir(to_dir).live.get(&to_name).copied();
        match (target, node) {
            // The same file under both names (possible after a crash): rename does nothing.
            (Some(existing), _) if existing == node => return Ok(()),
            (None, _) | (Some(Node::File(_)), Node::File(_)) => {}
            (Some(Node::Dir(_)), Node::File(_)) => return Err(os_error(EISDIR)),
            (Some(Node::File(_)), Node::Dir(_)) => return Err(os_error(ENOTDIR)),
            (Some(Node::Dir(existing)), Node::Dir(_)) => {
                if !state.dir(existing).live.is_empty() {
                    return Err(os_error(ENOTEMPTY));
                }
            }
        }
        state.unlink(from_dir, &from_name);
        if target.is_some() {
            state.unlink(to_dir, &to_name);
        }
        state.link(to_dir, to_name.clone(), node);
        state.pending.push(Change {
            parts: vec![
                DirOp::Unlink { dir: from_dir, name: from_name, node },
                DirOp::Link { dir: to_dir, name: to_name, node, replace: true },
            ],
        });
        state.collect_garbage();
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.tick_other()?;
        let (dir, name) = state.parent_and_name(path)?;
        match state.dir(dir).live.get(&name) {
            None => return Err(os_error(ENOENT)),
            Some(Node::Dir(_)) => return Err(os_error(EISDIR)),
            Some(Node::File(_)) => {}
        }
        let node = state.unlink(dir, &name);
        state.pending.push(Change { parts: vec![DirOp::Unlink { dir, name, node }] });
        state.collect_garbage();
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut state = self.lock();
        state.tick_other()?;
        let id = state.resolve_dir(dir)?;
        Ok(state.dir(id).live.keys().map(|name| dir.join(name)).collect())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.tick_other()?;
        let names = components(dir)?;
        let mut current = ROOT;
        for (name_idx, name) in names.iter().enumerate() {
            match state.dir(current).live.get(*name) {
                Some(Node::Dir(id)) => current = *id,
                Some(Node::File(_)) if name_idx + 1 == names.len() => {
                    return Err(os_error(EEXIST));
                }
                Some(Node::File(_)) => return Err(os_error(ENOTDIR)),
                None => {
                    let id = state.new_id();
                    state.dirs.insert(id, Dir::default());
                    let name = (*name).to_os_string();
                    state.link(current, name.clone(), Node::Dir(id));
                    state.pending.push(Change {
                        parts: vec![DirOp::Link {
                            dir: current,
                            name,
                            node: Node::Dir(id),
                            replace: false,
                        }],
                    });
                    current = id;
                }
            }
        }
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.tick_other()?;
        let (parent, name) = state.parent_and_name(dir)?;
        match state.dir(parent).live.get(&name) {
            None => return Err(os_error(ENOENT)),
            Some(Node::File(_)) => return Err(os_error(ENOTDIR)),
            Some(Node::Dir(id)) => {
                if !state.dir(*id).live.is_empty() {
                    return Err(os_error(ENOTEMPTY));
                }
            }
        }
        let node = state.unlink(parent, &name);
        state.pending.push(Change { parts: vec![DirOp::Unlink { dir: parent, name, node }] });
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let mut state = self.lock();
        state.tick_other()?;
        match state.lookup(path) {
            Ok(node) => Ok(node.is_some()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(error),
        }
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.tick_other()?;
        let id = state.resolve_dir(dir)?;
        let synced = state.dir_mut(id);
        synced.durable.clone_from(&synced.live);
        for change in &mut state.pending {
            change.parts.retain(|part| part.dir() != id);
        }
        state.pending.retain(|change| !change.parts.is_empty());
        state.collect_garbage();
        Ok(())
    }

    fn lock_exclusive(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        // The lock file is created like any file (and counts as an operation).
        drop(self.open(path, OpenMode::CreateOrOpen)?);
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        if !locks.insert(path.to_owned()) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked", path.display()),
            ));
        }
        Ok(Box::new(SimFileLock { locks: Arc::clone(&self.locks), path: path.to_owned() }))
    }

    /// The capacity (without one, `i64::MAX` bytes, as an unbounded disk) and what is left of
    /// it; `path` must exist.
    fn space(&self, path: &Path) -> io::Result<FsSpace> {
        let mut state = self.lock();
        state.tick_other()?;
        if state.lookup(path)?.is_none() {
            return Err(os_error(ENOENT));
        }
        let total_bytes = state.capacity_bytes.unwrap_or(i64::MAX.unsigned_abs());
        Ok(FsSpace { total_bytes, usable_bytes: total_bytes.saturating_sub(state.used_bytes()) })
    }
}

/// A file opened by [`SimFs`]: a handle on one file (inode), valid until the next crash.
struct SimFile {
    state: Arc<Mutex<State>>,
    ino: Ino,
    writable: bool,
    epoch: u64,
    path: PathBuf,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile")
            .field("path", &self.path)
            .field("ino", &self.ino)
            .field("writable", &self.writable)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        let mut state = lock(&self.state);
        if state.epoch == self.epoch {
            let inode = state.inode_mut(self.ino);
            assert!(inode.open_handles > 0, "open handle count underflow");
            inode.open_handles -= 1;
            state.collect_garbage();
        }
    }
}

impl File for SimFile {
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()> {
        let mut state = lock(&self.state);
        state.tick_other()?;
        let inode = state.handle_inode(self)?;
        // Like std's read_exact_at, an empty read makes no system call and cannot fail.
        if buf.is_empty() {
            return Ok(());
        }
        let bytes = usize::try_from(position)
            .ok()
            .and_then(|start| inode.live.get(start..start.checked_add(buf.len())?));
        let Some(bytes) = bytes else {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "failed to fill whole buffer",
            ));
        };
        buf.copy_from_slice(bytes);
        Ok(())
    }

    fn write_all_at(&self, bytes: &[u8], position: u64) -> io::Result<()> {
        let mut state = lock(&self.state);
        match state.tick(OpClass::Write { len: bytes.len() }) {
            Injected::Nothing => {}
            Injected::Fail(error) => return Err(error),
            Injected::ShortWrite { prefix_bytes } => {
                state.handle_inode(self)?;
                if !self.writable {
                    return Err(os_error(EBADF));
                }
                state.write(self.ino, &bytes[..prefix_bytes], position)?;
                return Err(os_error(EIO));
            }
        }
        state.handle_inode(self)?;
        // Like std's write_all_at, an empty write makes no system call and cannot fail.
        if bytes.is_empty() {
            return Ok(());
        }
        if !self.writable {
            return Err(os_error(EBADF));
        }
        state.write(self.ino, bytes, position)
    }

    fn len(&self) -> io::Result<u64> {
        let mut state = lock(&self.state);
        state.tick_other()?;
        Ok(state.handle_inode(self)?.live.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = lock(&self.state);
        let old_len = match state.handle_inode(self) {
            Ok(inode) => inode.live.len() as u64,
            Err(_) => u64::MAX,
        };
        let class = if len > old_len { OpClass::Grow } else { OpClass::Other };
        if let Injected::Fail(error) = state.tick(class) {
            return Err(error);
        }
        state.handle_inode(self)?;
        if !self.writable {
            // What Linux's ftruncate returns for a file not open for writing.
            return Err(os_error(EINVAL));
        }
        let new_len = usize::try_from(len).map_err(|_| os_error(EINVAL))?;
        state.check_capacity(len.saturating_sub(old_len))?;
        let now_ms = state.now_ms;
        let inode = state.inode_mut(self.ino);
        let old_len = inode.live.len();
        if new_len != old_len {
            inode.live.resize(new_len, 0);
            inode.mark_dirty(old_len.min(new_len));
            inode.modified_ms = now_ms;
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut state = lock(&self.state);
        state.tick_other()?;
        let inode = state.handle_inode(self)?;
        if let Some(from) = inode.dirty_from.take() {
            assert!(
                from <= inode.durable.len() && from <= inode.live.len(),
                "dirty_from invariant"
            );
            inode.durable.truncate(from);
            inode.durable.extend_from_slice(&inode.live[from..]);
        }
        debug_assert_eq!(inode.durable, inode.live, "after sync_data, durable == live");
        inode.durable_modified_ms = inode.modified_ms;
        Ok(())
    }

    fn modified_ms(&self) -> io::Result<i64> {
        let mut state = lock(&self.state);
        state.tick_other()?;
        Ok(state.handle_inode(self)?.modified_ms)
    }

    fn set_modified_ms(&self, ms: i64) -> io::Result<()> {
        let mut state = lock(&self.state);
        state.tick_other()?;
        state.handle_inode(self)?.modified_ms = ms;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::sim_with_dir;
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;
    use crate::io::{StdFs, read_all};

    const SECTOR: usize = SimFs::SECTOR_BYTES;

    fn read_path(fs: &dyn Fs, path: &str) -> Option<Vec<u8>> {
        let path = Path::new(path);
        fs.exists(path)
            .unwrap()
            .then(|| read_all(fs.open(path, OpenMode::Read).unwrap().as_ref()).unwrap())
    }

    fn create(fs: &dyn Fs, path: &str, bytes: &[u8]) -> Box<dyn File> {
        let file = fs.open(Path::new(path), OpenMode::CreateNew).unwrap();
        file.write_all_at(bytes, 0).unwrap();
        file
    }

    fn pattern(seed: u8, len: usize) -> Vec<u8> {
        (0..len).map(|byte_idx| seed.wrapping_add((byte_idx % 251) as u8) | 1).collect()
    }

    fn check_raw_os_error(result: io::Result<impl fmt::Debug>, code: i32) {
        let error = result.unwrap_err();
        assert_eq!(error.raw_os_error(), Some(code), "{error}");
    }

    #[test]
    fn reads_see_live_bytes_and_crash_keeps_durable_bytes() {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"synced");
        fs.sync_dir(Path::new("/d")).unwrap();
        file.sync_data().unwrap();
        file.write_all_at(b" and not", 6).unwrap();
        assert_eq!(read_all(file.as_ref()).unwrap(), b"synced and not");

        // The unsynced 8 bytes end before the first sector boundary: all or nothing.
        let mut outcomes = BTreeSet::new();
        for seed in 0..64 {
            let fs = sim_with_dir("/d");
            let file = create(&fs, "/d/a.log", b"synced");
            fs.sync_dir(Path::new("/d")).unwrap();
            file.sync_data().unwrap();
            file.write_all_at(b" and not", 6).unwrap();
            fs.crash(seed);
            outcomes.insert(read_path(&fs, "/d/a.log").unwrap());
        }
        let expected: BTreeSet<Vec<u8>> = [b"synced".to_vec(), b"synced and not".to_vec()].into();
        assert_eq!(outcomes, expected);
    }

    #[test]
    fn crash_keeps_a_sector_aligned_prefix_of_the_tail() {
        let mut lens = BTreeSet::new();
        for seed in 0..200 {
            let fs = sim_with_dir("/d");
            let file = create(&fs, "/d/a.log", &pattern(1, 100));
            file.sync_data().unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            file.write_all_at(&pattern(2, 1100), 100).unwrap();
            fs.crash(seed);
            let bytes = read_path(&fs, "/d/a.log").unwrap();
            let mut live = pattern(1, 100);
            live.extend(pattern(2, 1100));
            assert!(live.starts_with(&bytes), "seed {seed}");
            lens.insert(bytes.len());
        }
        assert_eq!(lens, [100, 512, 1024, 1200].into());
    }

    #[test]
    fn crash_tears_overwrites_per_sector() {
        let old = pattern(1, 4 * SECTOR);
        let new = pattern(100, 4 * SECTOR);
        let mut n_torn = 0;
        for seed in 0..32 {
            let fs = sim_with_dir("/d");
            let file = create(&fs, "/d/a.index", &old);
            file.sync_data().unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            file.write_all_at(&new, 0).unwrap();
            fs.crash(seed);
            let bytes = read_path(&fs, "/d/a.index").unwrap();
            assert_eq!(bytes.len(), old.len());
            let sectors: Vec<bool> = (0..4)
                .map(|sector_idx| {
                    let range = sector_idx * SECTOR..(sector_idx + 1) * SECTOR;
                    if bytes[range.clone()] == new[range.clone()] {
                        true
                    } else {
                        assert_eq!(bytes[range.clone()], old[range], "seed {seed}");
                        false
                    }
                })
                .collect();
            if sectors.contains(&true) && sectors.contains(&false) {
                n_torn += 1;
            }
        }
        assert!(n_torn > 0, "some crash tears the overwrite");
    }

    #[test]
    fn crash_keeps_or_drops_an_unsynced_truncation() {
        let mut lens = BTreeSet::new();
        for seed in 0..32 {
            let fs = sim_with_dir("/d");
            let file = create(&fs, "/d/a.log", &pattern(1, 1000));
            file.sync_data().unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            file.set_len(300).unwrap();
            fs.crash(seed);
            let bytes = read_path(&fs, "/d/a.log").unwrap();
            assert!(pattern(1, 1000).starts_with(&bytes));
            lens.insert(bytes.len());
        }
        assert_eq!(lens, [300, 1000].into());
    }

    #[test]
    fn crash_is_deterministic() {
        let run = |seed| {
            let fs = sim_with_dir("/d");
            for file_idx in 0..8u8 {
                let file = create(&fs, &format!("/d/{file_idx}.log"), &pattern(file_idx, 700));
                if file_idx % 2 == 0 {
                    file.sync_data().unwrap();
                }
                file.write_all_at(&pattern(file_idx, 3000), 700).unwrap();
            }
            fs.crash(seed);
            fs.list(Path::new("/d"))
                .unwrap()
                .into_iter()
                .map(|path| (path.clone(), read_path(&fs, path.to_str().unwrap())))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn unsynced_directory_changes_may_or_may_not_survive() {
        let mut outcomes = BTreeSet::new();
        for seed in 0..32 {
            let fs = sim_with_dir("/d");
            let file = create(&fs, "/d/new.log", b"x");
            file.sync_data().unwrap();
            fs.crash(seed);
            outcomes.insert(fs.exists(Path::new("/d/new.log")).unwrap());
        }
        assert_eq!(outcomes, [false, true].into());

        // Once its directory is synced, a file's entry survives every crash.
        for seed in 0..32 {
            let fs = sim_with_dir("/d");
            create(&fs, "/d/new.log", b"x").sync_data().unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            fs.crash(seed);
            assert_eq!(read_path(&fs, "/d/new.log").unwrap(), b"x");
        }
    }

    #[test]
    fn a_rename_is_atomic_on_crash() {
        let mut outcomes = BTreeSet::new();
        for seed in 0..32 {
            let fs = sim_with_dir("/d");
            create(&fs, "/d/a.cleaned", b"data").sync_data().unwrap();
            create(&fs, "/d/a.log", b"old").sync_data().unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            fs.rename(Path::new("/d/a.cleaned"), Path::new("/d/a.log")).unwrap();
            fs.crash(seed);
            let names: Vec<PathBuf> = fs.list(Path::new("/d")).unwrap();
            let log = read_path(&fs, "/d/a.log").unwrap();
            match names.len() {
                2 => assert_eq!(log, b"old"),
                1 => assert_eq!(log, b"data"),
                n_names => panic!("{n_names} entries after crash"),
            }
            outcomes.insert(names.len());
        }
        assert_eq!(outcomes, [1, 2].into());
    }

    #[test]
    fn a_chain_of_renames_leaves_exactly_one_name() {
        // Kafka's cleaner: .cleaned -> .swap -> final name, with no directory sync between. A crash
        // leaves the file under one of the three names, never under two or none.
        let mut outcomes = BTreeSet::new();
        for seed in 0..64 {
            let fs = sim_with_dir("/d");
            create(&fs, "/d/0.log.cleaned", b"data").sync_data().unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            fs.rename(Path::new("/d/0.log.cleaned"), Path::new("/d/0.log.swap")).unwrap();
            fs.rename(Path::new("/d/0.log.swap"), Path::new("/d/0.log")).unwrap();
            fs.crash(seed);
            let names = fs.list(Path::new("/d")).unwrap();
            assert_eq!(names.len(), 1, "seed {seed}: {names:?}");
            assert_eq!(read_path(&fs, names[0].to_str().unwrap()).unwrap(), b"data");
            outcomes.insert(names[0].clone());
        }
        let expected: BTreeSet<PathBuf> =
            ["/d/0.log", "/d/0.log.cleaned", "/d/0.log.swap"].iter().map(PathBuf::from).collect();
        assert_eq!(outcomes, expected);
    }

    #[test]
    fn a_rename_across_directories_needs_both_synced() {
        for seed in 0..32 {
            let fs = sim_with_dir("/d");
            fs.create_dir_all(Path::new("/e")).unwrap();
            fs.sync_dir(Path::new("/")).unwrap();
            create(&fs, "/d/a.log", b"data").sync_data().unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            fs.rename(Path::new("/d/a.log"), Path::new("/e/a.log")).unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            fs.sync_dir(Path::new("/e")).unwrap();
            fs.crash(seed);
            assert!(!fs.exists(Path::new("/d/a.log")).unwrap());
            assert_eq!(read_path(&fs, "/e/a.log").unwrap(), b"data");
        }
    }

    #[test]
    fn an_unsynced_directory_may_vanish_with_its_files() {
        let mut outcomes = BTreeSet::new();
        for seed in 0..32 {
            let fs = SimFs::new();
            fs.create_dir_all(Path::new("/d")).unwrap();
            create(&fs, "/d/a.log", b"data").sync_data().unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            fs.crash(seed);
            let exists = fs.exists(Path::new("/d")).unwrap();
            if exists {
                assert_eq!(read_path(&fs, "/d/a.log").unwrap(), b"data");
            }
            outcomes.insert(exists);
        }
        assert_eq!(outcomes, [false, true].into());
    }

    #[test]
    fn handles_from_before_a_crash_are_stale() {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"x");
        fs.crash(0);
        check_raw_os_error(file.len(), ESTALE);
        check_raw_os_error(file.write_all_at(b"y", 0), ESTALE);
    }

    #[test]
    fn handles_follow_renames_and_outlive_removal() {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"abc");
        fs.rename(Path::new("/d/a.log"), Path::new("/d/b.log")).unwrap();
        file.write_all_at(b"d", 3).unwrap();
        assert_eq!(read_path(&fs, "/d/b.log").unwrap(), b"abcd");
        fs.remove(Path::new("/d/b.log")).unwrap();
        assert_eq!(read_all(file.as_ref()).unwrap(), b"abcd");
        assert!(fs.list(Path::new("/d")).unwrap().is_empty());
    }

    #[test]
    fn namespace_errors_match_posix() {
        let fs = sim_with_dir("/d");
        create(&fs, "/d/a.log", b"x");
        check_raw_os_error(fs.open(Path::new("/d/missing"), OpenMode::Read), ENOENT);
        check_raw_os_error(fs.open(Path::new("/d/missing"), OpenMode::ReadWrite), ENOENT);
        check_raw_os_error(fs.open(Path::new("/d/a.log"), OpenMode::CreateNew), EEXIST);
        check_raw_os_error(fs.open(Path::new("/nope/a.log"), OpenMode::CreateOrOpen), ENOENT);
        check_raw_os_error(fs.open(Path::new("/d"), OpenMode::ReadWrite), EISDIR);
        check_raw_os_error(fs.open(Path::new("/d/a.log/x"), OpenMode::Read), ENOTDIR);
        check_raw_os_error(fs.remove(Path::new("/d")), EISDIR);
        check_raw_os_error(fs.remove(Path::new("/d/missing")), ENOENT);
        check_raw_os_error(fs.remove_dir(Path::new("/d")), ENOTEMPTY);
        check_raw_os_error(fs.remove_dir(Path::new("/d/a.log")), ENOTDIR);
        check_raw_os_error(fs.create_dir_all(Path::new("/d/a.log")), EEXIST);
        check_raw_os_error(fs.create_dir_all(Path::new("/d/a.log/x")), ENOTDIR);
        check_raw_os_error(fs.rename(Path::new("/d"), Path::new("/d/x")), EINVAL);
        check_raw_os_error(fs.rename(Path::new("/d/missing"), Path::new("/d/x")), ENOENT);
        check_raw_os_error(fs.list(Path::new("/d/a.log")), ENOTDIR);
        check_raw_os_error(fs.sync_dir(Path::new("/missing")), ENOENT);
        check_raw_os_error(fs.open(Path::new("/d/../a"), OpenMode::Read), EINVAL);

        let read_only = fs.open(Path::new("/d/a.log"), OpenMode::Read).unwrap();
        check_raw_os_error(read_only.write_all_at(b"y", 0), EBADF);
        read_only.write_all_at(b"", 0).unwrap();
        read_only.read_exact_at(&mut [], 5).unwrap();
        check_raw_os_error(read_only.set_len(0), EINVAL);
        let mut buf = [0; 2];
        let error = read_only.read_exact_at(&mut buf, 0).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);

        fs.create_dir_all(Path::new("/d/sub/deeper")).unwrap();
        fs.remove_dir(Path::new("/d/sub/deeper")).unwrap();
        fs.rename(Path::new("/d/sub"), Path::new("/d/renamed")).unwrap();
        assert_eq!(
            fs.list(Path::new("/d")).unwrap(),
            [PathBuf::from("/d/a.log"), PathBuf::from("/d/renamed")]
        );
        assert!(!fs.exists(Path::new("/d/missing/x")).unwrap());
        check_raw_os_error(fs.exists(Path::new("/d/a.log/x")), ENOTDIR);
    }

    #[test]
    fn every_method_is_one_counted_operation() {
        let fs = sim_with_dir("/d");
        let start = fs.op_count();
        let file = fs.open(Path::new("/d/a.log"), OpenMode::CreateNew).unwrap();
        file.write_all_at(b"x", 0).unwrap();
        file.read_exact_at(&mut [0], 0).unwrap();
        file.len().unwrap();
        file.set_len(2).unwrap();
        file.sync_data().unwrap();
        file.modified_ms().unwrap();
        file.set_modified_ms(5).unwrap();
        fs.rename(Path::new("/d/a.log"), Path::new("/d/b.log")).unwrap();
        fs.list(Path::new("/d")).unwrap();
        fs.create_dir_all(Path::new("/d/sub")).unwrap();
        fs.remove_dir(Path::new("/d/sub")).unwrap();
        fs.exists(Path::new("/d/b.log")).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.remove(Path::new("/d/b.log")).unwrap();
        assert!(fs.remove(Path::new("/d/b.log")).is_err());
        drop(file);
        assert_eq!(fs.op_count() - start, 16);
    }

    #[test]
    fn fail_nth_fails_exactly_the_nth_operation() {
        for n in 1..=6 {
            let fs = sim_with_dir("/d");
            let file = create(&fs, "/d/a.log", b"abc");
            fs.set_fault_plan(FaultPlan::FailNth { n, kind: FaultKind::Eio });
            let results = [
                file.len().map(drop),
                file.write_all_at(b"d", 3),
                file.sync_data(),
                fs.sync_dir(Path::new("/d")),
                file.set_len(10),
                fs.list(Path::new("/d")).map(drop),
                file.len().map(drop),
            ];
            for (op_idx, result) in results.iter().enumerate() {
                let op_no = op_idx as u64 + 1;
                match result {
                    Err(error) => {
                        assert_eq!(op_no, n);
                        assert_eq!(error.raw_os_error(), Some(EIO));
                    }
                    Ok(()) => assert_ne!(op_no, n),
                }
            }
        }
    }

    #[test]
    fn a_failed_write_changes_nothing() {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"abc");
        fs.set_now_ms(9);
        fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
        check_raw_os_error(file.write_all_at(b"xyz", 1), EIO);
        assert_eq!(read_all(file.as_ref()).unwrap(), b"abc");
        assert_eq!(file.modified_ms().unwrap(), 0);
    }

    #[test]
    fn fail_nth_enospc_waits_for_a_write() {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"abc");
        fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Enospc });
        file.len().unwrap();
        file.sync_data().unwrap();
        file.set_len(1).unwrap();
        check_raw_os_error(file.set_len(10), ENOSPC);
        file.set_len(10).unwrap();
        file.write_all_at(b"x", 0).unwrap();
    }

    #[test]
    fn short_write_writes_only_a_prefix() {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"");
        fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::ShortWrite });
        file.sync_data().unwrap();
        check_raw_os_error(file.write_all_at(b"0123456789", 0), EIO);
        assert_eq!(read_all(file.as_ref()).unwrap(), b"01234");
        file.write_all_at(b"56789", 5).unwrap();
        assert_eq!(read_all(file.as_ref()).unwrap(), b"0123456789");

        fs.set_fault_plan(FaultPlan::Probability {
            per_million: 1_000_000,
            seed: 3,
            kind: FaultKind::ShortWrite,
        });
        for _ in 0..20 {
            check_raw_os_error(file.write_all_at(b"abcdefghij", 10), EIO);
            let len = file.len().unwrap();
            assert!((10..20).contains(&len), "a strict prefix: {len}");
            assert!(b"0123456789abcdefghij".starts_with(&read_all(file.as_ref()).unwrap()));
            file.set_len(10).unwrap();
        }
    }

    #[test]
    fn probability_plan_is_seeded() {
        let pattern_of = |seed| {
            let fs = sim_with_dir("/d");
            let file = create(&fs, "/d/a.log", b"abc");
            fs.set_fault_plan(FaultPlan::Probability {
                per_million: 250_000,
                seed,
                kind: FaultKind::Eio,
            });
            (0..400).map(|_| file.len().is_err()).collect::<Vec<bool>>()
        };
        let failures = pattern_of(1);
        assert_eq!(failures, pattern_of(1));
        assert_ne!(failures, pattern_of(2));
        let n_failures = failures.iter().filter(|failed| **failed).count();
        assert!((60..140).contains(&n_failures), "{n_failures} of 400 at 25%");

        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"abc");
        fs.set_fault_plan(FaultPlan::Probability { per_million: 0, seed: 1, kind: FaultKind::Eio });
        assert!((0..100).all(|_| file.len().is_ok()));
    }

    #[test]
    fn capacity_limits_growth_with_enospc() {
        let fs = sim_with_dir("/d");
        fs.set_capacity_bytes(Some(1000));
        let a = create(&fs, "/d/a.log", &[1; 600]);
        let b = create(&fs, "/d/b.log", &[2; 300]);
        assert_eq!(fs.used_bytes(), 900);

        let error = b.write_all_at(&[3; 200], 300).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(ENOSPC));
        assert_eq!(error.kind(), io::ErrorKind::StorageFull);
        assert_eq!(b.len().unwrap(), 300, "nothing written");
        check_raw_os_error(b.set_len(500), ENOSPC);
        b.write_all_at(&[3; 200], 100).unwrap();
        b.write_all_at(&[3; 100], 300).unwrap();
        assert_eq!(fs.used_bytes(), 1000);

        // Space comes back when the last link and handle of a file are gone.
        fs.remove(Path::new("/d/a.log")).unwrap();
        assert_eq!(fs.used_bytes(), 1000, "a is still open");
        drop(a);
        assert_eq!(fs.used_bytes(), 400);
        b.set_len(1000).unwrap();
    }

    #[test]
    fn modified_times_come_from_the_manual_clock() {
        let fs = sim_with_dir("/d");
        fs.set_now_ms(1_000);
        let file = create(&fs, "/d/a.log", b"");
        assert_eq!(file.modified_ms().unwrap(), 1_000);
        fs.set_now_ms(2_000);
        file.write_all_at(b"x", 0).unwrap();
        assert_eq!(file.modified_ms().unwrap(), 2_000);
        file.sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        file.set_modified_ms(5).unwrap();
        assert_eq!(file.modified_ms().unwrap(), 5);
        fs.crash(0);
        let file = fs.open(Path::new("/d/a.log"), OpenMode::Read).unwrap();
        assert_eq!(file.modified_ms().unwrap(), 2_000, "durable as of the last sync_data");
    }

    /// One step of a random history over three files in `/d`, for the crash property.
    #[derive(Debug, Clone)]
    enum CrashOp {
        Create(usize),
        Append(usize, usize),
        SyncData(usize),
        SyncDir,
        Remove(usize),
    }

    fn crash_op() -> impl Strategy<Value = CrashOp> {
        prop_oneof![
            1 => (0..3usize).prop_map(CrashOp::Create),
            4 => (0..3usize, 0..1500usize)
                .prop_map(|(file_idx, len)| CrashOp::Append(file_idx, len)),
            2 => (0..3usize).prop_map(CrashOp::SyncData),
            1 => Just(CrashOp::SyncDir),
            1 => (0..3usize).prop_map(CrashOp::Remove),
        ]
    }

    /// What the test knows about one file name.
    #[derive(Debug, Default)]
    struct ModelFile {
        handle: Option<Box<dyn File>>,
        created_op_idx: Option<usize>,
        live_exists: bool,
        durable_exists: bool,
        /// Created or removed since the last directory sync.
        entry_changed: bool,
        live: Vec<u8>,
        durable: Vec<u8>,
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn crash_keeps_synced_data_and_a_sector_aligned_prefix(
            ops in proptest::collection::vec(crash_op(), 0..40),
            seed in any::<u64>(),
        ) {
            let fs = sim_with_dir("/d");
            let mut files: Vec<ModelFile> = (0..3).map(|_| ModelFile::default()).collect();
            let path = |file_idx: usize| PathBuf::from(format!("/d/{file_idx}.log"));
            for (op_idx, op) in ops.iter().enumerate() {
                match *op {
                    // Each name is created at most once, so its contents have one history.
                    CrashOp::Create(file_idx) if files[file_idx].created_op_idx.is_none() => {
                        let model = &mut files[file_idx];
                        let handle = fs.open(&path(file_idx), OpenMode::CreateNew).unwrap();
                        model.handle = Some(handle);
                        model.created_op_idx = Some(op_idx);
                        model.live_exists = true;
                        model.entry_changed = true;
                    }
                    CrashOp::Append(file_idx, len) if files[file_idx].live_exists => {
                        let model = &mut files[file_idx];
                        let bytes = pattern(op_idx as u8, len);
                        let handle = model.handle.as_ref().unwrap();
                        handle.write_all_at(&bytes, model.live.len() as u64).unwrap();
                        model.live.extend(bytes);
                    }
                    CrashOp::SyncData(file_idx) if files[file_idx].live_exists => {
                        let model = &mut files[file_idx];
                        model.handle.as_ref().unwrap().sync_data().unwrap();
                        model.durable.clone_from(&model.live);
                    }
                    CrashOp::SyncDir => {
                        fs.sync_dir(Path::new("/d")).unwrap();
                        for model in &mut files {
                            model.durable_exists = model.live_exists;
                            model.entry_changed = false;
                        }
                    }
                    CrashOp::Remove(file_idx) if files[file_idx].live_exists => {
                        fs.remove(&path(file_idx)).unwrap();
                        let model = &mut files[file_idx];
                        model.handle = None;
                        model.live_exists = false;
                        model.entry_changed = true;
                    }
                    _ => {}
                }
            }
            fs.crash(seed);
            for (file_idx, model) in files.iter().enumerate() {
                let exists = fs.exists(&path(file_idx)).unwrap();
                if !model.entry_changed {
                    prop_assert_eq!(exists, model.durable_exists, "file {}", file_idx);
                }
                if !exists {
                    continue;
                }
                let file = fs.open(&path(file_idx), OpenMode::Read).unwrap();
                let bytes = read_all(file.as_ref()).unwrap();
                prop_assert!(bytes.starts_with(&model.durable), "file {}: lost", file_idx);
                prop_assert!(model.live.starts_with(&bytes), "file {}: not its writes", file_idx);
                let len = bytes.len();
                prop_assert!(
                    len == model.durable.len()
                        || len == model.live.len()
                        || len.is_multiple_of(SECTOR),
                    "file {}: length {} is not sector-aligned",
                    file_idx,
                    len
                );
            }
        }
    }

    /// One step of a random history, run on StdFs and SimFs side by side.
    #[derive(Debug, Clone)]
    enum EquivalenceOp {
        Open { slot: usize, name: usize, mode: OpenMode },
        Write { slot: usize, position: u64, len: usize },
        SetLen { slot: usize, len: u64 },
        Read { slot: usize, position: u64, len: usize },
        SyncData { slot: usize },
        Rename { from: usize, to: usize },
        Remove { name: usize },
    }

    fn equivalence_op() -> impl Strategy<Value = EquivalenceOp> {
        let mode = prop_oneof![
            Just(OpenMode::Read),
            Just(OpenMode::ReadWrite),
            Just(OpenMode::CreateNew),
            Just(OpenMode::CreateOrOpen),
        ];
        let (slot, name) = (0..3usize, 0..3usize);
        prop_oneof![
            2 => (slot.clone(), name.clone(), mode)
                .prop_map(|(slot, name, mode)| EquivalenceOp::Open { slot, name, mode }),
            4 => (slot.clone(), 0..3000u64, 0..700usize)
                .prop_map(|(slot, position, len)| EquivalenceOp::Write { slot, position, len }),
            1 => (slot.clone(), 0..4000u64)
                .prop_map(|(slot, len)| EquivalenceOp::SetLen { slot, len }),
            1 => (slot.clone(), 0..3000u64, 0..700usize)
                .prop_map(|(slot, position, len)| EquivalenceOp::Read { slot, position, len }),
            1 => slot.clone().prop_map(|slot| EquivalenceOp::SyncData { slot }),
            1 => (name.clone(), name.clone())
                .prop_map(|(from, to)| EquivalenceOp::Rename { from, to }),
            1 => name.prop_map(|name| EquivalenceOp::Remove { name }),
        ]
    }

    /// The same call's outcome on both file systems: equal values, or errors of the same kind.
    fn check_same<T: PartialEq + fmt::Debug>(
        op: &EquivalenceOp,
        std_result: io::Result<T>,
        sim_result: io::Result<T>,
    ) -> Result<(), TestCaseError> {
        match (std_result, sim_result) {
            (Ok(std_value), Ok(sim_value)) => prop_assert_eq!(std_value, sim_value, "{:?}", op),
            (Err(std_error), Err(sim_error)) => {
                prop_assert_eq!(std_error.kind(), sim_error.kind(), "{:?}", op);
            }
            (std_result, sim_result) => {
                prop_assert!(false, "{:?}: std {:?}, sim {:?}", op, std_result, sim_result);
            }
        }
        Ok(())
    }

    /// Runs a handle operation on the same slot of both file systems, if both have it open.
    fn check_file_op(
        op: &EquivalenceOp,
        op_idx: usize,
        std_slots: &[Option<Box<dyn File>>],
        sim_slots: &[Option<Box<dyn File>>],
    ) -> Result<(), TestCaseError> {
        let slot = match *op {
            EquivalenceOp::Open { slot, .. }
            | EquivalenceOp::Write { slot, .. }
            | EquivalenceOp::SetLen { slot, .. }
            | EquivalenceOp::Read { slot, .. }
            | EquivalenceOp::SyncData { slot } => slot,
            EquivalenceOp::Rename { .. } | EquivalenceOp::Remove { .. } => return Ok(()),
        };
        let (Some(std_file), Some(sim_file)) = (&std_slots[slot], &sim_slots[slot]) else {
            return Ok(());
        };
        match *op {
            EquivalenceOp::Write { position, len, .. } => {
                let bytes = pattern(op_idx as u8, len);
                let std_result = std_file.write_all_at(&bytes, position);
                check_same(op, std_result, sim_file.write_all_at(&bytes, position))?;
            }
            EquivalenceOp::SetLen { len, .. } => {
                check_same(op, std_file.set_len(len), sim_file.set_len(len))?;
            }
            EquivalenceOp::Read { position, len, .. } => {
                let (mut std_buf, mut sim_buf) = (vec![0; len], vec![0; len]);
                let std_result = std_file.read_exact_at(&mut std_buf, position).map(|()| std_buf);
                let sim_result = sim_file.read_exact_at(&mut sim_buf, position).map(|()| sim_buf);
                check_same(op, std_result, sim_result)?;
            }
            EquivalenceOp::SyncData { .. } => {
                check_same(op, std_file.sync_data(), sim_file.sync_data())?;
            }
            EquivalenceOp::Open { .. }
            | EquivalenceOp::Rename { .. }
            | EquivalenceOp::Remove { .. } => {}
        }
        check_same(op, std_file.len(), sim_file.len())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn sim_fs_matches_std_fs(ops in proptest::collection::vec(equivalence_op(), 1..40)) {
            let tempdir = tempfile::tempdir().unwrap();
            let (std_fs, sim_fs) = (StdFs, sim_with_dir("/d"));
            let std_root = tempdir.path().to_path_buf();
            let sim_root = PathBuf::from("/d");
            let std_path = |name_idx: usize| std_root.join(format!("{name_idx}.log"));
            let sim_path = |name_idx: usize| sim_root.join(format!("{name_idx}.log"));
            let mut std_slots: Vec<Option<Box<dyn File>>> = vec![None, None, None];
            let mut sim_slots: Vec<Option<Box<dyn File>>> = vec![None, None, None];
            for (op_idx, op) in ops.iter().enumerate() {
                if let EquivalenceOp::Open { slot, name, mode } = *op {
                    let std_file = std_fs.open(&std_path(name), mode);
                    let sim_file = sim_fs.open(&sim_path(name), mode);
                    match (std_file, sim_file) {
                        (Ok(std_file), Ok(sim_file)) => {
                            std_slots[slot] = Some(std_file);
                            sim_slots[slot] = Some(sim_file);
                        }
                        (Err(std_error), Err(sim_error)) => {
                            prop_assert_eq!(std_error.kind(), sim_error.kind(), "{:?}", op);
                        }
                        (std_file, sim_file) => {
                            prop_assert!(false, "{:?}: std {:?}, sim {:?}", op, std_file, sim_file);
                        }
                    }
                    continue;
                }
                match *op {
                    EquivalenceOp::Rename { from, to } => {
                        let std_result = std_fs.rename(&std_path(from), &std_path(to));
                        let sim_result = sim_fs.rename(&sim_path(from), &sim_path(to));
                        check_same(op, std_result, sim_result)?;
                    }
                    EquivalenceOp::Remove { name } => {
                        let std_result = std_fs.remove(&std_path(name));
                        let sim_result = sim_fs.remove(&sim_path(name));
                        check_same(op, std_result, sim_result)?;
                    }
                    EquivalenceOp::Open { .. }
                    | EquivalenceOp::Write { .. }
                    | EquivalenceOp::SetLen { .. }
                    | EquivalenceOp::Read { .. }
                    | EquivalenceOp::SyncData { .. } => {
                        check_file_op(op, op_idx, &std_slots, &sim_slots)?;
                    }
                }
            }
            let file_names = |fs: &dyn Fs, root: &Path| -> Vec<(OsString, Vec<u8>)> {
                fs.list(root)
                    .unwrap()
                    .into_iter()
                    .map(|path| {
                        let file = fs.open(&path, OpenMode::Read).unwrap();
                        (path.file_name().unwrap().to_os_string(), read_all(file.as_ref()).unwrap())
                    })
                    .collect()
            };
            prop_assert_eq!(file_names(&std_fs, &std_root), file_names(&sim_fs, &sim_root));
        }
    }
}
