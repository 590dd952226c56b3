//! What the console counts on the broker's paths, with one relaxed atomic add each: bytes in
//! and out of the Kafka listeners, records appended, and requests and failed requests per API
//! key. The history samples them; nothing here allocates or locks.

use std::sync::atomic::{AtomicU64, Ordering};

/// API keys counted one by one (Kafka's keys are below 100); higher keys share the last slot.
const API_SLOTS: usize = 128;

/// The broker's running totals since start.
#[derive(Debug)]
pub(crate) struct Traffic {
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    records_in: AtomicU64,
    requests: [AtomicU64; API_SLOTS],
    request_errors: [AtomicU64; API_SLOTS],
}

impl Default for Traffic {
    fn default() -> Self {
        Self {
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            records_in: AtomicU64::new(0),
            requests: std::array::from_fn(|_| AtomicU64::new(0)),
            request_errors: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// [`Traffic`] read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TrafficTotals {
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
    pub(crate) records_in: u64,
    /// `(api key, requests, failed requests)` of every key seen.
    pub(crate) apis: Vec<(i16, u64, u64)>,
}

fn slot(api_key: i16) -> usize {
    usize::try_from(api_key).unwrap_or(0).min(API_SLOTS - 1)
}

impl Traffic {
    /// A request frame read (with its size prefix).
    pub(crate) fn bytes_in(&self, n: usize) {
        self.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A response written.
    pub(crate) fn bytes_out(&self, n: usize) {
        self.bytes_out.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Records appended by a produce.
    pub(crate) fn records_in(&self, n: u64) {
        self.records_in.fetch_add(n, Ordering::Relaxed);
    }

    /// A request of `api_key` handled; `failed` when it closed the connection.
    pub(crate) fn request(&self, api_key: i16, failed: bool) {
        if let Some(counter) = self.requests.get(slot(api_key)) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        if failed && let Some(counter) = self.request_errors.get(slot(api_key)) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The totals now.
    pub(crate) fn totals(&self) -> TrafficTotals {
        let apis = self
            .requests
            .iter()
            .zip(&self.request_errors)
            .enumerate()
            .filter_map(|(key, (requests, errors))| {
                let requests = requests.load(Ordering::Relaxed);
                let key = i16::try_from(key).ok()?;
                (requests > 0).then(|| (key, requests, errors.load(Ordering::Relaxed)))
            })
            .collect();
        TrafficTotals {
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
            records_in: self.records_in.load(Ordering::Relaxed),
            apis,
        }
    }
}
