//! The cleaner's I/O rate limit, shared by its threads (Kafka's `Throttler` with
//! `log.cleaner.io.max.bytes.per.second`).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the rate is checked (Kafka's `checkIntervalMs`, 300 ms).
const CHECK_INTERVAL: Duration = Duration::from_millis(300);

/// Sleeps callers whose bytes per second over the last interval exceed the limit.
#[derive(Debug)]
pub(crate) struct Throttler {
    bytes_per_second_max: f64,
    window: Mutex<(Instant, u64)>,
}

impl Throttler {
    /// A throttler at `bytes_per_second_max` (infinite or non-positive: no limit).
    pub(crate) fn new(bytes_per_second_max: f64) -> Self {
        Self { bytes_per_second_max, window: Mutex::new((Instant::now(), 0)) }
    }

    /// A throttler that never sleeps.
    pub(crate) fn unlimited() -> Self {
        Self::new(f64::INFINITY)
    }

    fn is_limited(&self) -> bool {
        self.bytes_per_second_max.is_finite() && self.bytes_per_second_max > 0.0
    }

    /// Counts `bytes` and sleeps as long as the rate since the window opened says (Kafka's
    /// `maybeThrottle`).
    pub(crate) fn maybe_throttle(&self, bytes: u64) {
        if !self.is_limited() {
            return;
        }
        let sleep = {
            let mut window = self.window.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            window.1 += bytes;
            let elapsed = window.0.elapsed();
            if elapsed < CHECK_INTERVAL {
                return;
            }
            let rate = window.1 as f64 / elapsed.as_secs_f64();
            let sleep = if rate > self.bytes_per_second_max {
                let wanted = Duration::from_secs_f64(window.1 as f64 / self.bytes_per_second_max);
                wanted.saturating_sub(elapsed)
            } else {
                Duration::ZERO
            };
            *window = (Instant::now() + sleep, 0);
            sleep
        };
        if !sleep.is_zero() {
            std::thread::sleep(sleep);
        }
    }
}
