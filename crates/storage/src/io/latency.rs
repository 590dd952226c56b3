//! A fixed-size latency histogram of atomic counters (power-of-two microsecond buckets), for
//! the fsyncs a [`super::BudgetFs`] makes: recording is two clock reads and one atomic add,
//! and a snapshot gives percentiles without holding a lock or any sample.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Buckets: bucket `i` counts durations below `2^i` microseconds (the last one everything
/// longer, about 36 minutes and up).
const BUCKETS: usize = 32;

/// Durations counted in power-of-two microsecond buckets.
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    buckets: [AtomicU64; BUCKETS],
    max_us: AtomicU64,
}

/// Percentiles of a [`LatencyHistogram`] at one moment, each the upper bound of its bucket (so
/// at most twice the true value), in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencySnapshot {
    /// Durations recorded.
    pub count: u64,
    /// The median's bucket bound.
    pub p50_us: u64,
    /// The 99th percentile's bucket bound.
    pub p99_us: u64,
    /// The 99.9th percentile's bucket bound.
    pub p999_us: u64,
    /// The longest duration recorded, exactly.
    pub max_us: u64,
}

impl LatencyHistogram {
    /// Counts one duration.
    pub fn record(&self, elapsed: Duration) {
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let bucket = (u64::BITS - us.leading_zeros()) as usize;
        if let Some(counter) = self.buckets.get(bucket.min(BUCKETS - 1)) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        self.max_us.fetch_max(us, Ordering::Relaxed);
    }

    /// The percentiles now.
    pub fn snapshot(&self) -> LatencySnapshot {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let count: u64 = counts.iter().sum();
        let max_us = self.max_us.load(Ordering::Relaxed);
        let percentile = |per_mille: u64| -> u64 {
            if count == 0 {
                return 0;
            }
            // The rank of the percentile, 1-based, rounded up.
            let rank = (count * per_mille).div_ceil(1000).max(1);
            let mut seen = 0;
            for (i, n) in counts.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return (1u64 << i).min(max_us.max(1));
                }
            }
            max_us
        };
        LatencySnapshot {
            count,
            p50_us: percentile(500),
            p99_us: percentile(990),
            p999_us: percentile(999),
            max_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::LatencyHistogram;

    #[test]
    fn percentiles_are_the_bounds_of_the_buckets_that_hold_them() {
        let histogram = LatencyHistogram::default();
        assert_eq!(histogram.snapshot().count, 0);
        for _ in 0..990 {
            histogram.record(Duration::from_micros(100)); // bucket [64, 128)
        }
        for _ in 0..10 {
            histogram.record(Duration::from_millis(5)); // bucket [4096, 8192)
        }
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.count, 1000);
        assert_eq!(snapshot.p50_us, 128);
        assert_eq!(snapshot.p99_us, 128);
        assert_eq!(snapshot.p999_us, 5000, "capped by the largest duration seen");
        assert_eq!(snapshot.max_us, 5000);
    }
}
