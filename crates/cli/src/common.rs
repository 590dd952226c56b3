//! What the subcommands share: opening a log directory, partition choice, timing.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use seglog_storage::config::BrokerLogConfig;
use seglog_storage::io::BudgetedStdFs;
use seglog_storage::manager::{LogManager, OpenReport, SystemClock};

/// The default log directory.
pub(crate) const DEFAULT_LOG_DIR: &str = "./seglog-data";

/// The log directory argument every storage subcommand takes.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LogDirArgs {
    /// The log directory (Kafka's `log.dirs`; several separated by commas). Global, so that
    /// `seglog topics create --log-dir D` and `seglog topics --log-dir D create` both work.
    #[arg(long, global = true, default_value = DEFAULT_LOG_DIR, value_delimiter = ',')]
    pub(crate) log_dir: Vec<PathBuf>,
}

/// Opens the log directories (creating them when missing), recovering as a broker would. The
/// tools run no cleaner threads (`seglog produce`'s background thread is for its flushes);
/// `seglog compact` cleans on demand.
pub(crate) fn open_manager(dirs: &[PathBuf]) -> Result<(Arc<LogManager>, OpenReport)> {
    let cleaner = seglog_storage::cleaner::CleanerConfig {
        enable: false,
        ..seglog_storage::cleaner::CleanerConfig::default()
    };
    let config = BrokerLogConfig { log_dirs: dirs.to_vec(), cleaner, ..BrokerLogConfig::default() };
    // Within a descriptor budget, as the broker: a tool can create and load any number of
    // partitions under this machine's RLIMIT_NOFILE.
    let fs = BudgetedStdFs::new(config.open_files_max).fs;
    let (manager, report) = LogManager::open(fs, Arc::new(SystemClock), config)
        .with_context(|| format!("cannot open log directory {}", show(dirs)))?;
    Ok((Arc::new(manager), report))
}

/// Opens existing log directories only: a missing one is an error, not created.
pub(crate) fn open_existing(dirs: &[PathBuf]) -> Result<(Arc<LogManager>, OpenReport)> {
    for dir in dirs {
        anyhow::ensure!(dir.is_dir(), "log directory {} does not exist", dir.display());
    }
    open_manager(dirs)
}

/// The directories as the user wrote them.
pub(crate) fn show(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|dir| dir.display().to_string()).collect::<Vec<_>>().join(",")
}

/// Kafka's default partition for a keyed record: `toPositive(murmur2(key)) % n`.
pub(crate) fn partition_for_key(key: &[u8], n_partitions: i32) -> i32 {
    use seglog_format::java::{murmur2, to_positive};
    to_positive(murmur2(key)) % n_partitions.max(1)
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    use seglog_storage::manager::Clock;
    SystemClock.now_ms()
}

/// Writes `text` to standard output; a reader that went away (`| head`) is not an error.
pub(crate) fn print_to_stdout(text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(error).context("cannot write to standard output")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's `UtilsTest.testMurmur2` vectors through `toPositive(murmur2(key)) % n`.
    #[test]
    fn partition_for_key_matches_kafka() {
        // murmur2("21") = -973932308, toPositive = 1173551340.
        assert_eq!(partition_for_key(b"21", 10), 0);
        assert_eq!(partition_for_key(b"21", 1_173_551_341), 1_173_551_340);
        // murmur2("foobar") = -790332482, toPositive = 1357151166.
        assert_eq!(partition_for_key(b"foobar", 10), 6);
        assert_eq!(partition_for_key(b"foobar", 0), 0);
    }
}
