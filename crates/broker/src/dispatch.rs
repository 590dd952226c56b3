//! One request in, one response out (Kafka's `RequestChannel` parsing and `KafkaApis.handle`):
//! the header is read with the version the API key implies, the body with the `kafka-protocol`
//! codec of that API and version, and the response is framed with the response header version
//! the API key implies (always v0 for ApiVersions).

use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::Broker;
use crate::apis::{api_name, api_version_list, route, supported_versions};
use crate::error::Error;
use crate::request::{Reply, Request};
use crate::security::throttle::{self, Throttle};

/// What the connection does after a request.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Write this frame: the size prefix with the response header, then the body (kept apart
    /// so that a large Fetch body is written as is, not copied behind its header).
    Respond(Bytes, Bytes),
    /// Write these pieces: the size prefix with the response header, then the body's bytes
    /// and file ranges (a Fetch whose records are sent from their segments' files).
    RespondPieces(Vec<crate::file_send::Piece>),
    /// Nothing to send (a produce with acks=0).
    NoResponse,
    /// Close the connection, as Kafka does for a request it cannot parse.
    Close(Error),
}

/// Parses the header: the API key and version come first, and the header version follows
/// from them (not from the message version alone).
pub(crate) fn parse_header(
    frame: &Bytes,
    session: Arc<crate::security::Session>,
) -> Result<Request, Error> {
    let Some(&[k0, k1, v0, v1]) = frame.get(0..4) else {
        return Err(Error::NoHeader { len: frame.len() });
    };
    let raw_key = i16::from_be_bytes([k0, k1]);
    let version = i16::from_be_bytes([v0, v1]);
    let api_key = ApiKey::try_from(raw_key).map_err(|()| Error::UnknownApiKey(raw_key))?;
    let header_version = api_key.request_header_version(version);
    let mut buf = frame.clone();
    let header = RequestHeader::decode(&mut buf, header_version)
        .map_err(|error| Error::HeaderDecode(error.into()))?;
    Ok(Request { header, api_key, version, body: buf, session })
}

/// The API key of a request frame, read from its first two bytes without parsing the header.
pub(crate) fn peek_api_key(frame: &Bytes) -> Option<ApiKey> {
    let &[k0, k1] = frame.get(0..2)? else { return None };
    ApiKey::try_from(i16::from_be_bytes([k0, k1])).ok()
}

pub(crate) fn frame(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: BytesMut,
) -> Result<(Bytes, Bytes), Error> {
    let prefix = frame_prefix(api_key, version, correlation_id, body.len())?;
    Ok((prefix, body.freeze()))
}

/// The size prefix and response header of a response whose body is `body_len` bytes.
fn frame_prefix(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body_len: usize,
) -> Result<Bytes, Error> {
    let header_version = if api_key == ApiKey::ApiVersions {
        // Always v0, so that a client that sent an unsupported version can read the answer.
        0
    } else {
        api_key.response_header_version(version)
    };
    let mut header = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut header, header_version)
        .map_err(|error| Error::Encode { what: "response header", source: error.into() })?;
    let size = i32::try_from(header.len() + body_len).map_err(|_| Error::ResponseTooLarge)?;
    let mut prefix = BytesMut::with_capacity(4 + header.len());
    prefix.put_i32(size);
    prefix.put_slice(&header);
    Ok(prefix.freeze())
}

/// The ApiVersions answer to a version we do not speak: error 35 with our version list, in v0.
fn unsupported_api_versions(correlation_id: i32) -> Outcome {
    let mut response = ApiVersionsResponse::default();
    response.error_code = ResponseError::UnsupportedVersion.code();
    response.api_keys = api_version_list();
    let mut body = BytesMut::new();
    if let Err(error) = response.encode(&mut body, 0) {
        return Outcome::Close(Error::Encode {
            what: "api versions response",
            source: error.into(),
        });
    }
    match frame(ApiKey::ApiVersions, 0, correlation_id, body) {
        Ok((prefix, body)) => Outcome::Respond(prefix, body),
        Err(reason) => Outcome::Close(reason),
    }
}

/// Handles one request frame (without its size prefix).
pub(crate) async fn handle(
    broker: &Arc<Broker>,
    frame_bytes: Bytes,
    session: &Arc<crate::security::Session>,
) -> Outcome {
    handle_throttled(broker, frame_bytes, session).await.0
}

/// [`handle`], with how long the connection stays muted after it (client quotas).
pub(crate) async fn handle_throttled(
    broker: &Arc<Broker>,
    frame_bytes: Bytes,
    session: &Arc<crate::security::Session>,
) -> (Outcome, Throttle) {
    let request_bytes = frame_bytes.len();
    let request = match parse_header(&frame_bytes, Arc::clone(session)) {
        Ok(request) => request,
        Err(reason) => {
            // An ApiVersions request of a version we do not know may have a header we cannot
            // read either; Kafka answers it with v0 whenever the key and correlation id parse.
            if let Some(&[k0, k1, v0, v1, c0, c1, c2, c3]) = frame_bytes.get(0..8) {
                let key = i16::from_be_bytes([k0, k1]);
                let version = i16::from_be_bytes([v0, v1]);
                let served = supported_versions(ApiKey::ApiVersions)
                    .is_some_and(|(min, max)| (min..=max).contains(&version));
                if key == ApiKey::ApiVersions as i16 && !served {
                    return (
                        unsupported_api_versions(i32::from_be_bytes([c0, c1, c2, c3])),
                        Throttle::default(),
                    );
                }
            }
            return (Outcome::Close(reason), Throttle::default());
        }
    };
    let api_key = request.api_key;
    let Some((min, max)) = supported_versions(api_key) else {
        return (Outcome::Close(Error::NotEnabled(api_key)), Throttle::default());
    };
    if !(min..=max).contains(&request.version) {
        if api_key == ApiKey::ApiVersions {
            return (unsupported_api_versions(request.header.correlation_id), Throttle::default());
        }
        let reason = Error::UnsupportedVersion { api: api_key, version: request.version, min, max };
        return (Outcome::Close(reason), Throttle::default());
    }
    let started = Instant::now();
    let name = api_name(api_key);
    let result = route(broker, &request).await;
    ::metrics::counter!("seglog_requests_total", "api" => name).increment(1);
    ::metrics::histogram!("seglog_request_seconds", "api" => name)
        .record(started.elapsed().as_secs_f64());
    let result = match result {
        // Quotas rewrite the body (a throttled Fetch is answered without records): one that
        // may be rewritten is read into memory.
        Ok(Reply::Files(files)) if broker.security.quotas_configured() => {
            files.into_memory().map(Reply::Body)
        }
        result => result,
    };
    match result {
        Ok(Reply::Files(files)) => {
            let correlation_id = request.header.correlation_id;
            match frame_prefix(api_key, request.version, correlation_id, files.len()) {
                Ok(prefix) => {
                    (Outcome::RespondPieces(files.into_pieces(prefix)), Throttle::default())
                }
                Err(reason) => (Outcome::Close(reason), Throttle::default()),
            }
        }
        Ok(Reply::Body(mut body)) => {
            let throttle =
                throttle::apply(broker, &request, request_bytes, &mut body, started.elapsed());
            match frame(api_key, request.version, request.header.correlation_id, body) {
                Ok((prefix, body)) => (Outcome::Respond(prefix, body), throttle),
                Err(reason) => (Outcome::Close(reason), throttle),
            }
        }
        Ok(Reply::None) => {
            let mut nothing = BytesMut::new();
            let throttle =
                throttle::apply(broker, &request, request_bytes, &mut nothing, started.elapsed());
            (Outcome::NoResponse, throttle)
        }
        Err(reason) => {
            ::metrics::counter!("seglog_request_errors_total", "api" => name).increment(1);
            (Outcome::Close(reason), Throttle::default())
        }
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::ApiVersionsRequest;
    use kafka_protocol::protocol::HeaderVersion;

    use super::*;

    fn anonymous() -> Arc<crate::security::Session> {
        Arc::new(crate::security::Session::local(crate::security::ANONYMOUS))
    }

    #[test]
    fn header_of_fewer_than_four_bytes_is_refused() {
        let error = parse_header(&Bytes::from_static(&[0, 18, 0]), anonymous())
            .err()
            .map(|e| e.to_string());
        assert_eq!(error.as_deref(), Some("a 3-byte request has no header"));
        let error = parse_header(&Bytes::from_static(&[0x7f, 0x7f, 0, 0]), anonymous())
            .err()
            .map(|e| e.to_string());
        assert_eq!(error.as_deref(), Some("unknown api key 32639"));
    }

    #[test]
    fn header_version_follows_the_api_key() {
        assert_eq!(ApiKey::Produce.request_header_version(9), 2);
        assert_eq!(ApiKey::Produce.request_header_version(8), 1);
        assert_eq!(ApiKey::ApiVersions.response_header_version(3), 0);
        assert_eq!(<ApiVersionsRequest as HeaderVersion>::header_version(3), 2);
    }
}
