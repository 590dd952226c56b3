//! The bucket of tiered storage, for the tools: where it is (`--bucket`, `--prefix`,
//! `--endpoint`, `--region`, `--allow-http`, credentials from the `AWS_*` environment, as the
//! broker takes them), `seglog verify --remote`, the remote columns of `seglog topics
//! describe`, and the objects `seglog dump` reads from an `s3://` URL.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, Result};
use seglog_broker::object_store::path::Path as ObjectPath;
use seglog_broker::object_store::{ObjectStore, ObjectStoreExt};
use seglog_remote::{Manifest, PartitionLayout, S3Config, list_manifests, open_s3, verify_remote};

/// Where the bucket is.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RemoteArgs {
    /// The tiered storage bucket (the broker's `seglog.remote.storage.bucket`).
    #[arg(long)]
    pub(crate) bucket: Option<String>,
    /// The folder of the partitions in the bucket (`seglog.remote.storage.prefix`).
    #[arg(long, default_value = "seglog")]
    pub(crate) prefix: String,
    /// An S3-compatible endpoint (`seglog.remote.storage.endpoint`; default AWS or
    /// `AWS_ENDPOINT_URL`).
    #[arg(long)]
    pub(crate) endpoint: Option<String>,
    /// The bucket's region (default `AWS_REGION`).
    #[arg(long)]
    pub(crate) region: Option<String>,
    /// Allow an `http://` endpoint.
    #[arg(long)]
    pub(crate) allow_http: bool,
}

impl RemoteArgs {
    /// The bucket's client, when `--bucket` is given.
    pub(crate) fn open(&self) -> Result<Option<Arc<dyn ObjectStore>>> {
        let Some(bucket) = &self.bucket else { return Ok(None) };
        let store = open_s3(&S3Config {
            bucket: bucket.clone(),
            endpoint: self.endpoint.clone(),
            region: self.region.clone(),
            access_key_id: None,
            secret_access_key: None,
            allow_http: self.allow_http,
        })
        .with_context(|| format!("cannot open bucket {bucket}"))?;
        Ok(Some(store))
    }
}

/// A runtime for the object store's calls.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")
}

/// Every partition's manifest in the bucket, by (topic, partition).
pub(crate) fn manifests(
    store: &dyn ObjectStore,
    prefix: &str,
    runtime: &tokio::runtime::Runtime,
) -> Result<BTreeMap<(String, i32), Manifest>> {
    let manifests = runtime
        .block_on(list_manifests(store, prefix))
        .with_context(|| format!("cannot list the manifests under {prefix}"))?;
    Ok(manifests.into_iter().map(|m| ((m.topic.clone(), m.partition), m)).collect())
}

/// `seglog verify --remote`: each partition's manifest against the bucket (every object an entry
/// names is there, every `.log` has its size and CRC-32C) and the orphans. Returns whether no
/// partition had a problem; orphans (what a crash between an upload and its commit leaves, and
/// the broker collects) are listed without failing.
pub(crate) fn verify(args: &RemoteArgs, out: &mut impl Write) -> Result<bool> {
    let store = args.open()?.context("--remote needs --bucket")?;
    let runtime = runtime()?;
    let mut clean = true;
    let manifests = manifests(store.as_ref(), &args.prefix, &runtime)?;
    for ((topic, partition), manifest) in &manifests {
        let layout = PartitionLayout::new(&args.prefix, topic, *partition, &manifest.topic_id);
        let report = runtime
            .block_on(verify_remote(store.as_ref(), &layout))
            .with_context(|| format!("cannot verify {topic}-{partition}"))?;
        let verdict = if report.problems.is_empty() { "OK" } else { "DAMAGED" };
        writeln!(
            out,
            "{topic}-{partition}: {} segments, offsets [{}, {}), manifest version {}, writer epoch {}: {verdict}",
            report.segments,
            report.offsets.0,
            report.offsets.1,
            manifest.manifest_version,
            manifest.writer_epoch,
        )?;
        for problem in &report.problems {
            writeln!(out, "  problem: {problem}")?;
        }
        for orphan in &report.orphans {
            writeln!(out, "  orphan: {orphan}")?;
        }
        clean &= report.problems.is_empty();
    }
    writeln!(
        out,
        "{} partitions in bucket {}",
        manifests.len(),
        args.bucket.as_deref().unwrap_or("")
    )?;
    Ok(clean)
}

/// An `s3://bucket/key` URL's object, read whole.
pub(crate) fn read_url(url: &str, args: &RemoteArgs) -> Result<Vec<u8>> {
    let rest = url.strip_prefix("s3://").context("not an s3:// URL")?;
    let (bucket, key) = rest.split_once('/').with_context(|| format!("{url} names no object"))?;
    let args = RemoteArgs { bucket: Some(bucket.to_owned()), ..args.clone() };
    let store = args.open()?.context("no bucket")?;
    let runtime = runtime()?;
    let key = ObjectPath::from(key);
    let bytes = runtime
        .block_on(async { store.get(&key).await?.bytes().await })
        .with_context(|| format!("cannot read {url}"))?;
    Ok(bytes.to_vec())
}
