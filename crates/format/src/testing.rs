//! Test support for the workspace's tests (feature `testing`): where the real Kafka fixtures
//! are. Format does no I/O, so the caller says how to look at a directory (`storage::testing`
//! passes `StdFs`).

use std::path::{Path, PathBuf};

/// The `kafka-real` fixture sets: under `$SEGLOG_FIXTURES`, else `../shared/fixtures` beside the
/// repository, when `is_dir` finds them. When they are missing, a test under CI (`CI` set) fails
/// here; elsewhere this says loudly that the test skips and returns `None`.
#[expect(clippy::print_stderr, reason = "a skipped test says so")]
pub fn kafka_real_fixtures(is_dir: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    let root = std::env::var_os("SEGLOG_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"),
        PathBuf::from,
    );
    let dir = root.join("kafka-real");
    if is_dir(&dir) {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "fixtures missing in CI: {} (set SEGLOG_FIXTURES)",
        dir.display()
    );
    eprintln!("SKIPPED: fixtures not found at {} (set SEGLOG_FIXTURES)", dir.display());
    None
}
