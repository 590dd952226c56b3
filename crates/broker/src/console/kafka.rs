//! The console's Kafka requests: groups, configs and every action are asked of the broker's
//! own API handlers, as an admin client would ask them, so that they take the same checks,
//! the same ACLs (as the console's principal) and the same code paths as a client's request.

use std::sync::Arc;

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

use super::ApiError;
use crate::Broker;

/// The client id the console's requests carry (in the broker's request log and quotas).
const CLIENT_ID: &str = "seglog-console";

/// Sends `request` at `version` to the broker's handlers in `session` and decodes the answer.
pub(super) async fn call<R: Request>(
    broker: &Arc<Broker>,
    session: crate::security::Session,
    request: &R,
    version: i16,
) -> Result<R::Response, ApiError> {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)));
    let mut frame = BytesMut::new();
    header
        .encode(&mut frame, R::header_version(version))
        .and_then(|()| request.encode(&mut frame, version))
        .map_err(|error| ApiError::internal(format!("cannot encode the request: {error}")))?;
    let Some(mut response) = crate::handle_frame_in(broker, frame.freeze(), session).await else {
        return Err(ApiError::internal(format!(
            "the broker refused API key {} v{version}",
            R::KEY
        )));
    };
    response.advance(4.min(response.len()));
    ResponseHeader::decode(&mut response, R::Response::header_version(version))
        .and_then(|_| R::Response::decode(&mut response, version))
        .map_err(|error| ApiError::internal(format!("cannot decode the answer: {error}")))
}

/// The first result of an answer that must hold one (one topic, one resource, ...).
pub(super) fn first<'a, T>(api: &str, results: &'a [T]) -> Result<&'a T, ApiError> {
    results.first().ok_or_else(|| ApiError::internal(format!("{api} answered nothing")))
}

/// `Ok` for error code 0, else [`wire_error`].
pub(super) fn ok(api: &str, code: i16, message: Option<&StrBytes>) -> Result<(), ApiError> {
    if code == 0 { Ok(()) } else { Err(wire_error(api, code, message.cloned())) }
}

/// The API error for a Kafka error code in an answer: its status by kind, Kafka's name and
/// message.
pub(super) fn wire_error(api: &str, code: i16, message: Option<StrBytes>) -> ApiError {
    use axum::http::StatusCode;
    use kafka_protocol::ResponseError as E;
    let error = E::try_from_code(code);
    let status = match error {
        Some(E::UnknownTopicOrPartition | E::GroupIdNotFound | E::UnknownTopicId) => {
            StatusCode::NOT_FOUND
        }
        Some(
            E::TopicAuthorizationFailed
            | E::GroupAuthorizationFailed
            | E::ClusterAuthorizationFailed
            | E::TransactionalIdAuthorizationFailed,
        ) => StatusCode::FORBIDDEN,
        Some(
            E::TopicAlreadyExists | E::NonEmptyGroup | E::UnknownMemberId | E::RebalanceInProgress,
        ) => StatusCode::CONFLICT,
        Some(
            E::RequestTimedOut
            | E::NotCoordinator
            | E::CoordinatorNotAvailable
            | E::CoordinatorLoadInProgress,
        ) => StatusCode::SERVICE_UNAVAILABLE,
        Some(E::UnknownServerError | E::KafkaStorageError) | None => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        Some(_) => StatusCode::BAD_REQUEST,
    };
    let name = error.map_or_else(|| format!("error code {code}"), |e| format!("{e:?}"));
    let text = match message.filter(|m| !m.is_empty()) {
        Some(message) => format!("{api} failed with {name}: {message}"),
        None => format!("{api} failed with {name}"),
    };
    ApiError::new(status, text)
}
