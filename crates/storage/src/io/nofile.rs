//! RLIMIT_NOFILE, raised to its hard limit at start, and the default budget of open log files.

use std::io;
use std::sync::Arc;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

use super::{BudgetFs, StdFs};

/// The process's open files limit (RLIMIT_NOFILE) before and after [`raise_nofile_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileLimit {
    /// The soft limit found at start (`u64::MAX`: unlimited).
    pub soft_at_start: u64,
    /// The soft limit now.
    pub soft: u64,
    /// The hard limit (`u64::MAX`: unlimited).
    pub hard: u64,
}

/// Raises the soft RLIMIT_NOFILE to the hard limit (what Kafka's start scripts leave to the
/// operator's `ulimit -n`). When the hard limit is unlimited, or the raise is refused, the soft
/// limit stays as it was.
pub fn raise_nofile_limit() -> NofileLimit {
    let limit = getrlimit(Resource::Nofile);
    let soft_at_start = limit.current.unwrap_or(u64::MAX);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    let mut soft = soft_at_start;
    if soft < hard && hard != u64::MAX {
        let raised = Rlimit { current: Some(hard), maximum: limit.maximum };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            soft = hard;
        }
    }
    NofileLimit { soft_at_start, soft, hard }
}

/// The default of `seglog.open.files.max` for a soft RLIMIT_NOFILE of `soft`: a tenth of it, at
/// least 64; the rest is for connections and everything else.
pub fn open_files_max_default(soft: u64) -> usize {
    usize::try_from(soft / 10).unwrap_or(usize::MAX).max(64)
}

/// The real file system for the logs, within a descriptor budget.
#[derive(Debug, Clone)]
pub struct BudgetedStdFs {
    /// The file system to open the logs with.
    pub fs: Arc<BudgetFs>,
    /// The open files limit, raised.
    pub limit: NofileLimit,
}

impl BudgetedStdFs {
    /// Raises RLIMIT_NOFILE and makes a [`BudgetFs`] over [`StdFs`] of `open_files_max`
    /// descriptors (`seglog.open.files.max`; 0 for [`open_files_max_default`]).
    pub fn new(open_files_max: u32) -> Self {
        let limit = raise_nofile_limit();
        let max = match open_files_max {
            0 => open_files_max_default(limit.soft),
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        Self { fs: Arc::new(BudgetFs::new(Arc::new(StdFs), max)), limit }
    }
}

/// Whether `error` is EMFILE or ENFILE: the process or the system is out of descriptors.
pub fn is_descriptor_exhaustion(error: &io::Error) -> bool {
    const ENFILE: i32 = 23;
    const EMFILE: i32 = 24;
    error.raw_os_error().is_some_and(|code| code == EMFILE || code == ENFILE)
}
