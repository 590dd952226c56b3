//! A simulated object store for tests and benchmarks: around another store, each request fails
//! with a seeded probability, as S3 does under load (`503 SlowDown`), and a failed PUT may have
//! been stored before its answer was lost (a timeout after the write); and each PUT and GET
//! may take S3's time: a first-byte latency plus its bytes at a bandwidth.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use seglog_storage::testing::Rng;

/// What the store did to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FaultCounts {
    /// Requests failed before reaching the store.
    pub failed: u64,
    /// PUTs stored whose answer was then lost.
    pub answers_lost: u64,
}

#[derive(Debug)]
struct State {
    rng: Rng,
    percent: u64,
    counts: FaultCounts,
    latency: Option<Latency>,
}

/// The time a simulated request takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// Before the first byte.
    pub first_byte: std::time::Duration,
    /// Then its bytes at this rate.
    pub bytes_per_second: u64,
}

impl Latency {
    /// The time of a request carrying `bytes`.
    fn of(self, bytes: u64) -> std::time::Duration {
        let micros = bytes.saturating_mul(1_000_000) / self.bytes_per_second.max(1);
        self.first_byte + std::time::Duration::from_micros(micros)
    }
}

/// Fails `percent` of the requests to `inner` (a third of the failed PUTs after storing them).
#[derive(Debug)]
pub struct FaultStore {
    inner: Arc<dyn ObjectStore>,
    state: Mutex<State>,
}

/// The error S3 gives a client it wants to slow down.
fn slow_down(op: &str, location: &Path) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultStore",
        source: format!("503 SlowDown (injected) on {op} {location}").into(),
    }
}

impl FaultStore {
    /// `inner`, failing `percent` of the requests, drawn from `seed`.
    pub fn new(inner: Arc<dyn ObjectStore>, seed: u64, percent: u64) -> Self {
        Self {
            inner,
            state: Mutex::new(State {
                rng: Rng(seed),
                percent,
                counts: FaultCounts::default(),
                latency: None,
            }),
        }
    }

    /// Makes every PUT and GET take `latency` from now on (`None`: no delay).
    pub fn set_latency(&self, latency: Option<Latency>) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).latency = latency;
    }

    /// Waits as long as a request of `bytes` takes.
    async fn delay(&self, bytes: u64) {
        let latency = self.state.lock().unwrap_or_else(PoisonError::into_inner).latency;
        if let Some(latency) = latency {
            tokio::time::sleep(latency.of(bytes)).await;
        }
    }

    /// Fails `percent` of the requests from now on (0 heals the store).
    pub fn set_percent(&self, percent: u64) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).percent = percent;
    }

    /// What it did so far.
    pub fn counts(&self) -> FaultCounts {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).counts
    }

    /// A draw in 0..100, and the failure percentage.
    fn draw(&self) -> (u64, u64) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (state.rng.below(100), state.percent)
    }

    fn count(&self, lost: bool) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if lost {
            state.counts.answers_lost += 1;
        } else {
            state.counts.failed += 1;
        }
    }

    /// Whether this request fails.
    fn fails(&self) -> bool {
        let (draw, percent) = self.draw();
        draw < percent
    }
}

impl fmt::Display for FaultStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for FaultStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        if self.fails() {
            let lost = self.draw().0 < 33;
            if lost {
                self.inner.put_opts(location, payload, opts).await?;
            }
            self.count(lost);
            return Err(slow_down("put", location));
        }
        self.delay(payload.content_length() as u64).await;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if self.fails() {
            self.count(false);
            return Err(slow_down("get", location));
        }
        let got = self.inner.get_opts(location, options).await?;
        self.delay(got.range.end - got.range.start).await;
        Ok(got)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        if self.fails() {
            self.count(false);
            return locations
                .map(|location| location.and_then(|path| Err(slow_down("delete", &path))))
                .boxed();
        }
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        if self.fails() {
            self.count(false);
            let error = slow_down("list", prefix.unwrap_or(&Path::default()));
            return futures::stream::once(async move { Err(error) }).boxed();
        }
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
