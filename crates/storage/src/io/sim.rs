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
const EMFILE: i32 = 24;
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
    /// `EMFILE` (the process is out of descriptors); applies only to `open`.
    Emfile,
}

impl FaultKind {
    fn applies_to(self, class: OpClass) -> bool {
        match self {
            FaultKind::Eio => true,
            FaultKind::Enospc => matches!(class, OpClass::Write { .. } | OpClass::Grow),
            FaultKind::ShortWrite => matches!(class, OpClass::Write { .. }),
            FaultKind::Emfile => matches!(class, OpClass::Open),
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
    /// `open`.
    Open,
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
                    OpClass::Grow | OpClass::Open | OpClass::Other => 0,
                };
                (kind, prefix_bytes)
            }
            ActiveFault::Probability { per_million, rng, kind } => {
                if !kind.applies_to(class) || rng.below(1_000_000) >= u64::from(*per_million) {
                    return Injected::Nothing;
                }
                let prefix_bytes = match class {
                    OpClass::Write { len } if len > 0 => rng.below(len as u64) as usize,
                    OpClass::Write { .. } | OpClass::Grow | OpClass::Open | OpClass::Other => 0,
                };
                (*kind, prefix_bytes)
            }
        };
        match kind {
            FaultKind::Eio => Injected::Fail(os_error(EIO)),
            FaultKind::Enospc => Injected::Fail(os_error(ENOSPC)),
            FaultKind::ShortWrite => Injected::ShortWrite { prefix_bytes },
            FaultKind::Emfile => Injected::Fail(os_error(EMFILE)),
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
        match state.tick(OpClass::Open) {
            Injected::Nothing => {}
            Injected::Fail(error) => return Err(error),
            Injected::ShortWrite { .. } => unreachable!("short writes apply only to writes"),
        }
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
#[path = "sim_tests.rs"]
mod tests;
