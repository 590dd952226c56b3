//! Opening the bucket: S3 or any store that speaks its API, through `object_store`'s S3 client.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;

use crate::error::{RemoteError, Result};

/// Where the bucket is (Kafka's `remote.log.storage.manager.*` in spirit; seglog's keys are
/// `remote.log.storage.s3.*`). What is not set here comes from the `AWS_*` environment
/// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`,
/// `AWS_ENDPOINT`, ...), as the AWS tools read it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct S3Config {
    /// The bucket.
    pub bucket: String,
    /// An S3-compatible endpoint (`http://127.0.0.1:9000`); AWS's own when unset.
    pub endpoint: Option<String>,
    /// The region; the environment's, or `us-east-1`.
    pub region: Option<String>,
    /// The access key id, when not from the environment.
    pub access_key_id: Option<String>,
    /// The secret access key, when not from the environment.
    pub secret_access_key: Option<String>,
    /// Allows a plain-HTTP endpoint (test beds only).
    pub allow_http: bool,
}

/// The S3 client for `config`. Nothing is sent yet; run [`crate::probe_conditional_put`]
/// before tiering to it.
pub fn open_s3(config: &S3Config) -> Result<Arc<dyn ObjectStore>> {
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(&config.bucket);
    if let Some(endpoint) = &config.endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(region) = &config.region {
        builder = builder.with_region(region);
    }
    if let Some(key) = &config.access_key_id {
        builder = builder.with_access_key_id(key);
    }
    if let Some(secret) = &config.secret_access_key {
        builder = builder.with_secret_access_key(secret);
    }
    // Tiering retries a failed round itself, with its own backoff: the client's own retries
    // stay short, so that a bucket that is down is known in seconds, not minutes.
    let retry = object_store::RetryConfig {
        max_retries: 3,
        retry_timeout: std::time::Duration::from_secs(15),
        ..object_store::RetryConfig::default()
    };
    let store = builder
        .with_retry(retry)
        .with_allow_http(config.allow_http)
        .build()
        .map_err(|source| RemoteError::store("open", &config.bucket, source))?;
    Ok(Arc::new(store))
}
