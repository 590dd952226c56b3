//! The console's memory of the last hour, bounded: throughput points (bytes in and out,
//! records in, per second) sampled every `seglog.console.sample.interval.ms`, the request
//! rates per API between the last two samples, and each group's total lag every sixth sample,
//! for at most [`GROUPS_TRACKED_MAX`] groups.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use super::App;
use super::traffic::TrafficTotals;

/// Throughput points kept (an hour at the default 5 s).
pub(crate) const THROUGHPUT_POINTS_MAX: usize = 720;
/// Lag points kept per group (an hour at the default 30 s).
pub(crate) const LAG_POINTS_MAX: usize = 120;
/// Groups whose lag is remembered.
pub(crate) const GROUPS_TRACKED_MAX: usize = 1000;
/// Lag is sampled every this many throughput samples.
const LAG_EVERY: u64 = 6;

/// One throughput sample: rates over the interval that ended at `t_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct ThroughputPoint {
    pub(crate) t_ms: i64,
    pub(crate) bytes_in_per_sec: f64,
    pub(crate) bytes_out_per_sec: f64,
    pub(crate) records_in_per_sec: f64,
}

/// Requests per second of one API between the last two samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ApiRate {
    pub(crate) api_key: i16,
    pub(crate) api: String,
    pub(crate) requests_total: u64,
    pub(crate) failed_total: u64,
    pub(crate) requests_per_sec: f64,
}

#[derive(Debug, Default)]
struct Inner {
    last: Option<(i64, TrafficTotals)>,
    throughput: VecDeque<ThroughputPoint>,
    rates: Vec<ApiRate>,
    lag: BTreeMap<String, VecDeque<(i64, i64)>>,
}

/// The sampled history (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct History {
    inner: Mutex<Inner>,
}

#[expect(clippy::cast_precision_loss, reason = "rates are shown, not counted")]
fn per_sec(now: u64, before: u64, elapsed_ms: i64) -> f64 {
    now.saturating_sub(before) as f64 * 1000.0 / elapsed_ms.max(1) as f64
}

impl History {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes the totals at `now_ms`: a throughput point and the API rates since the last call.
    pub(crate) fn note_traffic(&self, now_ms: i64, totals: TrafficTotals) {
        let mut inner = self.lock();
        if let Some((then_ms, before)) = &inner.last {
            let elapsed = now_ms - then_ms;
            let point = ThroughputPoint {
                t_ms: now_ms,
                bytes_in_per_sec: per_sec(totals.bytes_in, before.bytes_in, elapsed),
                bytes_out_per_sec: per_sec(totals.bytes_out, before.bytes_out, elapsed),
                records_in_per_sec: per_sec(totals.records_in, before.records_in, elapsed),
            };
            let rates = totals
                .apis
                .iter()
                .map(|&(api_key, requests, failed)| {
                    let before_requests = before
                        .apis
                        .iter()
                        .find(|(key, _, _)| *key == api_key)
                        .map_or(0, |(_, n, _)| *n);
                    ApiRate {
                        api_key,
                        api: crate::apis::api_name_of(api_key).to_owned(),
                        requests_total: requests,
                        failed_total: failed,
                        requests_per_sec: per_sec(requests, before_requests, elapsed),
                    }
                })
                .collect();
            inner.rates = rates;
            if inner.throughput.len() == THROUGHPUT_POINTS_MAX {
                inner.throughput.pop_front();
            }
            inner.throughput.push_back(point);
        }
        inner.last = Some((now_ms, totals));
    }

    /// Notes each group's total lag at `now_ms`; groups not in `lags` are forgotten.
    pub(crate) fn note_lags(&self, now_ms: i64, lags: &BTreeMap<String, i64>) {
        let mut inner = self.lock();
        inner.lag.retain(|group, _| lags.contains_key(group));
        for (group, lag) in lags {
            if !inner.lag.contains_key(group) && inner.lag.len() >= GROUPS_TRACKED_MAX {
                continue;
            }
            let points = inner.lag.entry(group.clone()).or_default();
            if points.len() == LAG_POINTS_MAX {
                points.pop_front();
            }
            points.push_back((now_ms, *lag));
        }
    }

    /// The throughput points, oldest first.
    pub(crate) fn throughput(&self) -> Vec<ThroughputPoint> {
        self.lock().throughput.iter().copied().collect()
    }

    /// The latest throughput point.
    pub(crate) fn latest(&self) -> Option<ThroughputPoint> {
        self.lock().throughput.back().copied()
    }

    /// The request rates per API.
    pub(crate) fn rates(&self) -> Vec<ApiRate> {
        self.lock().rates.clone()
    }

    /// A group's lag points, oldest first.
    pub(crate) fn lag(&self, group: &str) -> Vec<(i64, i64)> {
        self.lock()
            .lag
            .get(group)
            .map(|points| points.iter().copied().collect())
            .unwrap_or_default()
    }
}

/// Samples until shutdown.
pub(super) async fn sample(app: App, mut stopped: watch::Receiver<bool>) {
    let interval = Duration::from_millis(app.broker.config.console.sample_interval_ms.max(10));
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n = 0u64;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stopped.changed() => return,
        }
        let now_ms = crate::handlers::now_ms();
        app.history.note_traffic(now_ms, app.broker.console.traffic.totals());
        if n.is_multiple_of(LAG_EVERY) {
            let broker = Arc::clone(&app.broker);
            match tokio::task::spawn_blocking(move || super::groups::all_lags(&broker)).await {
                Ok(lags) => app.history.note_lags(now_ms, &lags),
                Err(error) => tracing::debug!(%error, "the console could not sample lag"),
            }
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{GROUPS_TRACKED_MAX, History, LAG_POINTS_MAX, THROUGHPUT_POINTS_MAX};
    use crate::console::traffic::TrafficTotals;

    fn totals(bytes_in: u64, requests: u64) -> TrafficTotals {
        TrafficTotals { bytes_in, bytes_out: 0, records_in: 0, apis: vec![(0, requests, 1)] }
    }

    #[test]
    fn rates_are_differences_over_the_interval_and_the_history_is_bounded() {
        let history = History::default();
        history.note_traffic(0, totals(0, 0));
        assert!(history.throughput().is_empty(), "one sample makes no rate");
        history.note_traffic(2000, totals(4000, 10));
        let point = history.latest().expect("a point");
        assert!((point.bytes_in_per_sec - 2000.0).abs() < 1e-9, "{point:?}");
        let rates = history.rates();
        assert_eq!(rates.len(), 1);
        assert_eq!(rates[0].api, "Produce");
        assert!((rates[0].requests_per_sec - 5.0).abs() < 1e-9, "{rates:?}");
        for i in 0..(THROUGHPUT_POINTS_MAX as u64 + 10) {
            history.note_traffic(4000 + i64::try_from(i).unwrap_or(0) * 1000, totals(i, i));
        }
        assert_eq!(history.throughput().len(), THROUGHPUT_POINTS_MAX);
    }

    #[test]
    fn lag_is_kept_for_a_bounded_number_of_groups_and_points() {
        let history = History::default();
        let mut lags: BTreeMap<String, i64> =
            (0..GROUPS_TRACKED_MAX + 5).map(|i| (format!("g{i:05}"), 7)).collect();
        for t in 0..(LAG_POINTS_MAX + 3) {
            history.note_lags(i64::try_from(t).unwrap_or(0), &lags);
        }
        assert_eq!(history.lag("g00000").len(), LAG_POINTS_MAX);
        assert!(history.lag(&format!("g{:05}", GROUPS_TRACKED_MAX + 4)).is_empty());
        lags.remove("g00000");
        history.note_lags(1_000_000, &lags);
        assert!(history.lag("g00000").is_empty(), "a group gone is forgotten");
    }
}
