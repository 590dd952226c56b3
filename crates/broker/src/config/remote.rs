//! Tiered storage's broker keys (Kafka's `RemoteLogManagerConfig`, the part seglog uses), and
//! seglog's own keys for the bucket, since seglog has no pluggable `RemoteStorageManager`:
//! object storage through S3's API, with credentials from the `AWS_*` environment.

use std::collections::BTreeMap;

use seglog_storage::config::{ConfigError, Reader, Validator};

/// `remote.log.storage.system.enable`: the broker-wide switch (Kafka's key).
pub const REMOTE_LOG_STORAGE_SYSTEM_ENABLE: &str = "remote.log.storage.system.enable";
/// `seglog.remote.storage.bucket`: the S3 bucket.
pub const REMOTE_STORAGE_BUCKET: &str = "seglog.remote.storage.bucket";
/// `seglog.remote.storage.prefix`: the folder under which each partition's folder lies.
pub const REMOTE_STORAGE_PREFIX: &str = "seglog.remote.storage.prefix";
/// `seglog.remote.storage.endpoint`: an S3-compatible endpoint (MinIO, moto, R2, ...); empty
/// means AWS (or `AWS_ENDPOINT_URL`).
pub const REMOTE_STORAGE_ENDPOINT: &str = "seglog.remote.storage.endpoint";
/// `seglog.remote.storage.region`: the bucket's region (or `AWS_REGION`).
pub const REMOTE_STORAGE_REGION: &str = "seglog.remote.storage.region";
/// `seglog.remote.storage.allow.http`: allow an `http://` endpoint.
pub const REMOTE_STORAGE_ALLOW_HTTP: &str = "seglog.remote.storage.allow.http";
/// `remote.log.manager.task.interval.ms`: how often each partition's uploads and remote
/// retention run.
pub const REMOTE_LOG_MANAGER_TASK_INTERVAL_MS: &str = "remote.log.manager.task.interval.ms";
/// `remote.log.manager.task.retry.backoff.ms`: the first wait after a failed round.
pub const REMOTE_LOG_MANAGER_TASK_RETRY_BACKOFF_MS: &str =
    "remote.log.manager.task.retry.backoff.ms";
/// `remote.log.manager.task.retry.backoff.max.ms`: the longest wait after failed rounds.
pub const REMOTE_LOG_MANAGER_TASK_RETRY_BACKOFF_MAX_MS: &str =
    "remote.log.manager.task.retry.backoff.max.ms";
/// `remote.log.manager.copy.max.bytes.per.second`: the upload rate limit of the broker.
pub const REMOTE_LOG_MANAGER_COPY_MAX_BYTES_PER_SECOND: &str =
    "remote.log.manager.copy.max.bytes.per.second";
/// `remote.log.index.file.cache.total.size.bytes`: remote offset indexes held in memory.
pub const REMOTE_LOG_INDEX_FILE_CACHE_TOTAL_SIZE_BYTES: &str =
    "remote.log.index.file.cache.total.size.bytes";
/// `remote.fetch.max.wait.ms`: the longest a Fetch waits for a remote read.
pub const REMOTE_FETCH_MAX_WAIT_MS: &str = "remote.fetch.max.wait.ms";
/// `seglog.remote.fetch.chunk.bytes`: remote `.log` objects are read in chunks of this size.
pub const REMOTE_FETCH_CHUNK_BYTES: &str = "seglog.remote.fetch.chunk.bytes";
/// `seglog.remote.fetch.chunk.cache.bytes`: chunks held in memory at most (0: none).
pub const REMOTE_FETCH_CHUNK_CACHE_BYTES: &str = "seglog.remote.fetch.chunk.cache.bytes";

/// Where the bucket is and how tiering runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteStorageConfig {
    /// `remote.log.storage.system.enable` (false).
    pub enabled: bool,
    /// `seglog.remote.storage.bucket` (required when enabled).
    pub bucket: String,
    /// `seglog.remote.storage.prefix` (`seglog`).
    pub prefix: String,
    /// `seglog.remote.storage.endpoint` (none: AWS or `AWS_ENDPOINT_URL`).
    pub endpoint: Option<String>,
    /// `seglog.remote.storage.region` (none: `AWS_REGION`).
    pub region: Option<String>,
    /// `seglog.remote.storage.allow.http` (false).
    pub allow_http: bool,
    /// `remote.log.manager.task.interval.ms` (30000).
    pub task_interval_ms: u64,
    /// `remote.log.manager.task.retry.backoff.ms` (500).
    pub retry_backoff_ms: u64,
    /// `remote.log.manager.task.retry.backoff.max.ms` (30000).
    pub retry_backoff_max_ms: u64,
    /// `remote.log.manager.copy.max.bytes.per.second` (`Long.MAX`: unthrottled).
    pub copy_max_bytes_per_second: u64,
    /// `remote.log.index.file.cache.total.size.bytes` (1 GiB).
    pub index_cache_bytes_max: u64,
    /// `remote.fetch.max.wait.ms` (500).
    pub fetch_max_wait_ms: u64,
    /// `seglog.remote.fetch.chunk.bytes` (4 MiB).
    pub fetch_chunk_bytes: u64,
    /// `seglog.remote.fetch.chunk.cache.bytes` (128 MiB; 0: reads go straight to the bucket).
    pub fetch_chunk_cache_bytes: u64,
}

impl Default for RemoteStorageConfig {
    /// Kafka's defaults, tiering off.
    fn default() -> Self {
        Self {
            enabled: false,
            bucket: String::new(),
            prefix: "seglog".to_owned(),
            endpoint: None,
            region: None,
            allow_http: false,
            task_interval_ms: 30_000,
            retry_backoff_ms: 500,
            retry_backoff_max_ms: 30_000,
            copy_max_bytes_per_second: i64::MAX.unsigned_abs(),
            index_cache_bytes_max: 1 << 30,
            fetch_max_wait_ms: 500,
            fetch_chunk_bytes: 4 << 20,
            fetch_chunk_cache_bytes: 128 << 20,
        }
    }
}

fn optional_text(properties: &BTreeMap<String, String>, key: &str) -> Option<String> {
    properties.get(key).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty())
}

fn number(reader: &Reader<'_>, key: &str, default: u64, at_least: i64) -> Result<u64, ConfigError> {
    let value: i64 = reader.value(
        key,
        &i64::try_from(default).unwrap_or(i64::MAX),
        Validator::AtLeast(at_least),
    )?;
    Ok(value.unsigned_abs())
}

/// The remote storage keys of `properties`.
pub(crate) fn remote_storage_config(
    properties: &BTreeMap<String, String>,
) -> Result<RemoteStorageConfig, ConfigError> {
    let d = RemoteStorageConfig::default();
    let reader = Reader::new(properties);
    let enabled = reader.value(REMOTE_LOG_STORAGE_SYSTEM_ENABLE, &d.enabled, Validator::Any)?;
    let bucket = optional_text(properties, REMOTE_STORAGE_BUCKET).unwrap_or_default();
    if enabled && bucket.is_empty() {
        return Err(ConfigError::invalid(
            REMOTE_STORAGE_BUCKET,
            "",
            format!("{REMOTE_LOG_STORAGE_SYSTEM_ENABLE}=true needs a bucket"),
        ));
    }
    let prefix = optional_text(properties, REMOTE_STORAGE_PREFIX)
        .map_or(d.prefix, |prefix| prefix.trim_matches('/').to_owned());
    let config = RemoteStorageConfig {
        enabled,
        bucket,
        prefix,
        endpoint: optional_text(properties, REMOTE_STORAGE_ENDPOINT),
        region: optional_text(properties, REMOTE_STORAGE_REGION),
        allow_http: reader.value(REMOTE_STORAGE_ALLOW_HTTP, &d.allow_http, Validator::Any)?,
        task_interval_ms: number(
            &reader,
            REMOTE_LOG_MANAGER_TASK_INTERVAL_MS,
            d.task_interval_ms,
            1,
        )?,
        retry_backoff_ms: number(
            &reader,
            REMOTE_LOG_MANAGER_TASK_RETRY_BACKOFF_MS,
            d.retry_backoff_ms,
            0,
        )?,
        retry_backoff_max_ms: number(
            &reader,
            REMOTE_LOG_MANAGER_TASK_RETRY_BACKOFF_MAX_MS,
            d.retry_backoff_max_ms,
            0,
        )?,
        copy_max_bytes_per_second: number(
            &reader,
            REMOTE_LOG_MANAGER_COPY_MAX_BYTES_PER_SECOND,
            d.copy_max_bytes_per_second,
            1,
        )?,
        index_cache_bytes_max: number(
            &reader,
            REMOTE_LOG_INDEX_FILE_CACHE_TOTAL_SIZE_BYTES,
            d.index_cache_bytes_max,
            1,
        )?,
        fetch_max_wait_ms: number(&reader, REMOTE_FETCH_MAX_WAIT_MS, d.fetch_max_wait_ms, 1)?,
        fetch_chunk_bytes: number(&reader, REMOTE_FETCH_CHUNK_BYTES, d.fetch_chunk_bytes, 1)?,
        fetch_chunk_cache_bytes: number(
            &reader,
            REMOTE_FETCH_CHUNK_CACHE_BYTES,
            d.fetch_chunk_cache_bytes,
            0,
        )?,
    };
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn off_by_default_and_on_with_a_bucket() {
        assert_eq!(
            remote_storage_config(&BTreeMap::new()).expect("defaults"),
            RemoteStorageConfig::default()
        );
        let config = remote_storage_config(&props(&[
            (REMOTE_LOG_STORAGE_SYSTEM_ENABLE, "true"),
            (REMOTE_STORAGE_BUCKET, "tiered"),
            (REMOTE_STORAGE_PREFIX, "/cluster-a/"),
            (REMOTE_STORAGE_ENDPOINT, "http://127.0.0.1:9000"),
            (REMOTE_STORAGE_ALLOW_HTTP, "true"),
            (REMOTE_LOG_MANAGER_COPY_MAX_BYTES_PER_SECOND, "1048576"),
        ]))
        .expect("parses");
        assert!(config.enabled && config.allow_http);
        assert_eq!((config.bucket.as_str(), config.prefix.as_str()), ("tiered", "cluster-a"));
        assert_eq!(config.copy_max_bytes_per_second, 1 << 20);
    }

    #[test]
    fn enabled_without_a_bucket_or_with_a_bad_number_names_the_key() {
        let error = remote_storage_config(&props(&[(REMOTE_LOG_STORAGE_SYSTEM_ENABLE, "true")]))
            .expect_err("no bucket");
        assert_eq!(error.key(), Some(REMOTE_STORAGE_BUCKET));
        let error = remote_storage_config(&props(&[(REMOTE_FETCH_MAX_WAIT_MS, "0")]))
            .expect_err("at least 1");
        assert_eq!(error.key(), Some(REMOTE_FETCH_MAX_WAIT_MS));
    }
}
