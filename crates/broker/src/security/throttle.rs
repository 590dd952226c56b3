//! Client quotas applied to requests (Kafka's `KafkaApis` use of the `QuotaManagers` with
//! KIP-219's client-side throttling): a Produce's request bytes count against
//! `producer_byte_rate`, a Fetch's response bytes against `consumer_byte_rate`, and every
//! request's handling time against `request_percentage`. A violation is answered at once with
//! `throttle_time_ms` (Produce and Fetch; a throttled Fetch carries no data, as Kafka's
//! `getThrottledResponse`), and the connection reads nothing more until the throttle time has
//! passed (Kafka mutes the channel).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, FetchResponse, ProduceResponse};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::Broker;
use crate::handlers::now_ms;
use crate::request::Request;

/// What the quotas decided for one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Throttle {
    /// How long the connection stays muted after the response, in ms (0: not throttled).
    pub(crate) mute_ms: u64,
}

/// Records the request against the quotas that apply and rewrites a Produce or Fetch response
/// body with its throttle time. `request_bytes` is the request frame's size, `elapsed` the
/// handling time.
pub(crate) fn apply(
    broker: &Broker,
    request: &Request,
    request_bytes: usize,
    body: &mut BytesMut,
    elapsed: Duration,
) -> Throttle {
    let security = &broker.security;
    if !security.quotas_configured() {
        return Throttle::default();
    }
    let user = request.session.user();
    let client_id = request.header.client_id.as_deref().unwrap_or_default();
    let now = now_ms().max(0).cast_unsigned();
    let request_ms = security.request_quota.record_request_time_and_get_throttle_time_ms(
        user,
        client_id,
        u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
        now,
    );
    let bandwidth_ms = match request.api_key {
        ApiKey::Produce => {
            let ms = security.produce_quota.record_and_get_throttle_time_ms(
                user,
                client_id,
                bytes_f64(request_bytes),
                now,
            );
            let throttle = ms.max(request_ms);
            if throttle > 0 && request.version >= 1 {
                rewrite::<ProduceResponse>(body, request.version, |r| {
                    r.throttle_time_ms = clamp(throttle);
                });
            }
            ms
        }
        ApiKey::Fetch => {
            let bytes = bytes_f64(body.len());
            let ms =
                security.fetch_quota.record_and_get_throttle_time_ms(user, client_id, bytes, now);
            let throttle = ms.max(request_ms);
            if throttle > 0 {
                // Kafka takes the bytes back and answers without data.
                security.fetch_quota.unrecord(user, client_id, bytes, now);
                let mut empty = FetchResponse::default();
                empty.throttle_time_ms = clamp(throttle);
                let mut out = BytesMut::new();
                if empty.encode(&mut out, request.version).is_ok() {
                    *body = out;
                }
            }
            ms
        }
        _ => 0,
    };
    let mute_ms = bandwidth_ms.max(request_ms);
    if mute_ms > 0 {
        let quota = match request.api_key {
            ApiKey::Produce if bandwidth_ms >= request_ms => "producer_byte_rate",
            ApiKey::Fetch if bandwidth_ms >= request_ms => "consumer_byte_rate",
            _ => "request_percentage",
        };
        ::metrics::counter!(
            "seglog_throttle_time_ms_total",
            "quota" => quota,
            "user" => user.to_owned(),
            "client_id" => client_id.to_owned()
        )
        .increment(mute_ms);
        tracing::debug!(user, client_id, quota, mute_ms, "throttled");
    }
    Throttle { mute_ms }
}

/// A byte count as the quota sensors take it (exact below 2^52 bytes).
#[expect(clippy::cast_precision_loss, reason = "frames are at most a few hundred MiB")]
fn bytes_f64(bytes: usize) -> f64 {
    bytes as f64
}

fn clamp(ms: u64) -> i32 {
    i32::try_from(ms).unwrap_or(i32::MAX)
}

/// Decodes a response body, changes it, and encodes it again (Produce answers are small).
fn rewrite<T: Decodable + Encodable>(
    body: &mut BytesMut,
    version: i16,
    change: impl FnOnce(&mut T),
) {
    let mut bytes: Bytes = body.clone().freeze();
    let Ok(mut response) = T::decode(&mut bytes, version) else { return };
    change(&mut response);
    let mut out = BytesMut::new();
    if response.encode(&mut out, version).is_ok() {
        *body = out;
    }
}
