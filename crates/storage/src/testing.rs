//! Test support shared by the workspace's integration tests (feature `sim`): where the real
//! Kafka fixtures are.

use std::path::PathBuf;

use crate::io::{Fs, StdFs};

/// The `kafka-real` fixture sets: under `$SEGLOG_FIXTURES`, else `../shared/fixtures` beside the
/// repository. When they are missing, a test under CI (`CI` set) fails here; elsewhere this says
/// loudly that the test skips and returns `None`.
#[expect(clippy::print_stderr, reason = "a skipped test says so")]
pub fn kafka_real_fixtures() -> Option<PathBuf> {
    let root = std::env::var_os("SEGLOG_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"),
        PathBuf::from,
    );
    let dir = root.join("kafka-real");
    if StdFs.list(&dir).is_ok() {
        return Some(dir);
    }
    assert!(std::env::var_os("CI").is_none(), "fixtures missing in CI: {}", dir.display());
    eprintln!("SKIPPED: fixtures not found at {} (set SEGLOG_FIXTURES)", dir.display());
    None
}
