//! What the subcommands share: opening a log directory, partition choice, timing.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use seglog_storage::config::BrokerLogConfig;
use seglog_storage::io::StdFs;
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

/// Opens the log directories (creating them when missing), recovering as a broker would.
pub(crate) fn open_manager(dirs: &[PathBuf]) -> Result<(Arc<LogManager>, OpenReport)> {
    let config = BrokerLogConfig { log_dirs: dirs.to_vec(), ..BrokerLogConfig::default() };
    let (manager, report) = LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config)
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

/// Kafka's `Utils.murmur2`, which its default partitioner hashes keys with.
#[expect(
    clippy::little_endian_bytes,
    reason = "murmur2 reads its input little-endian, as Kafka's Utils.murmur2 does"
)]
pub(crate) fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: u32 = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for chunk in chunks.by_ref() {
        let mut k = u32::from_le_bytes(chunk.try_into().unwrap_or_default());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if let Some(first) = tail.first() {
        h ^= u32::from(*first);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Kafka's default partition for a keyed record: `toPositive(murmur2(key)) % n`.
pub(crate) fn partition_for_key(key: &[u8], n_partitions: i32) -> i32 {
    (murmur2(key) & 0x7fff_ffff) % n_partitions.max(1)
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    use seglog_storage::manager::Clock;
    SystemClock.now_ms()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's `UtilsTest.testMurmur2` vectors.
    #[test]
    fn murmur2_matches_kafka() {
        let cases: [(&[u8], i32); 5] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
        ];
        for (input, expected) in cases {
            assert_eq!(murmur2(input), expected, "{}", String::from_utf8_lossy(input));
        }
    }
}
