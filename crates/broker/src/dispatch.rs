//! One request in, one response out (Kafka's `RequestChannel` parsing and `KafkaApis.handle`):
//! the header is read with the version the API key implies, the body with the `kafka-protocol`
//! codec of that API and version, and the response is framed with the response header version
//! the API key implies (always v0 for ApiVersions).

use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    AlterConfigsRequest, ApiKey, ApiVersionsRequest, ApiVersionsResponse, CreatePartitionsRequest,
    CreateTopicsRequest, DeleteRecordsRequest, DeleteTopicsRequest, DescribeClusterRequest,
    DescribeConfigsRequest, FetchRequest, IncrementalAlterConfigsRequest, InitProducerIdRequest,
    ListOffsetsRequest, MetadataRequest, OffsetForLeaderEpochRequest, ProduceRequest,
    RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::Broker;
use crate::error::Error;
use crate::handlers;

/// The APIs this broker serves, with the versions it advertises: `(api key, min, max)`. Each
/// range is what the handlers implement, within what the `kafka-protocol` crate encodes. The
/// maxima are what Kafka 4.1 advertises by default (versions its schemas mark
/// `latestVersionUnstable` are left out: OffsetCommit and OffsetFetch v10, InitProducerId v6,
/// whose request codecs in `kafka-protocol` 0.18 also lack their new fields); the minima stay
/// where old clients (kcat 1.7.1) need them.
pub const SUPPORTED_APIS: [(ApiKey, i16, i16); 30] = [
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::AlterReplicaLogDirs, 1, 2),
    (ApiKey::DescribeLogDirs, 1, 4),
];

/// The APIs the group coordinator serves (routed to `handlers::groups`).
pub const GROUP_APIS: [ApiKey; 13] = [
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::SyncGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::ListGroups,
    ApiKey::DescribeGroups,
    ApiKey::DeleteGroups,
    ApiKey::OffsetDelete,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
];

/// The advertised version range of `api_key`, if it is served.
pub fn supported_versions(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED_APIS.iter().find(|(key, _, _)| *key == api_key).map(|(_, min, max)| (*min, *max))
}

/// What the connection does after a request.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Write this frame: the size prefix with the response header, then the body (kept apart
    /// so that a large Fetch body is written as is, not copied behind its header).
    Respond(Bytes, Bytes),
    /// Nothing to send (a produce with acks=0).
    NoResponse,
    /// Close the connection, as Kafka does for a request it cannot parse.
    Close(Error),
}

/// A decoded request body, with what the response needs.
pub(crate) struct Request {
    pub(crate) header: RequestHeader,
    pub(crate) api_key: ApiKey,
    pub(crate) version: i16,
    pub(crate) body: Bytes,
    /// The client's address, when known (not for `handle_frame`).
    pub(crate) peer: Option<std::net::SocketAddr>,
}

/// What a handler returns: an encoded body, or no response at all.
pub(crate) enum Reply {
    Body(BytesMut),
    None,
}

impl Request {
    /// The client's address as Kafka shows it (`/127.0.0.1`); only the group APIs need it,
    /// so it is formatted there, not for every request.
    pub(crate) fn client_host(&self) -> String {
        self.peer.map_or_else(|| "/127.0.0.1".to_owned(), |peer| format!("/{}", peer.ip()))
    }

    /// Decodes the body as `T`. Bytes after the message are ignored, as Kafka's
    /// `AbstractRequest.parseRequest` ignores them (librdkafka 2.12 sends three after a Metadata
    /// v12 request for all topics).
    pub(crate) fn decode<T: Decodable>(&self) -> Result<T, Error> {
        let mut body = self.body.clone();
        let decoded = T::decode(&mut body, self.version).map_err(|error| Error::Decode {
            api: self.api_key,
            version: self.version,
            source: error.into(),
        })?;
        if !body.is_empty() {
            tracing::debug!(
                api = ?self.api_key,
                version = self.version,
                trailing_bytes = body.len(),
                "ignoring bytes after the request body"
            );
        }
        Ok(decoded)
    }
}

/// Encodes a response body.
pub(crate) fn encode<T: Encodable>(response: &T, version: i16) -> Result<Reply, Error> {
    let mut buf = BytesMut::new();
    response
        .encode(&mut buf, version)
        .map_err(|error| Error::Encode { what: "response", source: error.into() })?;
    Ok(Reply::Body(buf))
}

fn api_name(api_key: ApiKey) -> &'static str {
    match api_key {
        ApiKey::Produce => "Produce",
        ApiKey::Fetch => "Fetch",
        ApiKey::ListOffsets => "ListOffsets",
        ApiKey::Metadata => "Metadata",
        ApiKey::ApiVersions => "ApiVersions",
        ApiKey::CreateTopics => "CreateTopics",
        ApiKey::DeleteTopics => "DeleteTopics",
        ApiKey::DeleteRecords => "DeleteRecords",
        ApiKey::OffsetForLeaderEpoch => "OffsetForLeaderEpoch",
        ApiKey::DescribeConfigs => "DescribeConfigs",
        ApiKey::AlterConfigs => "AlterConfigs",
        ApiKey::CreatePartitions => "CreatePartitions",
        ApiKey::IncrementalAlterConfigs => "IncrementalAlterConfigs",
        ApiKey::DescribeCluster => "DescribeCluster",
        ApiKey::InitProducerId => "InitProducerId",
        ApiKey::FindCoordinator => "FindCoordinator",
        ApiKey::JoinGroup => "JoinGroup",
        ApiKey::SyncGroup => "SyncGroup",
        ApiKey::Heartbeat => "Heartbeat",
        ApiKey::LeaveGroup => "LeaveGroup",
        ApiKey::OffsetCommit => "OffsetCommit",
        ApiKey::OffsetFetch => "OffsetFetch",
        ApiKey::ListGroups => "ListGroups",
        ApiKey::DescribeGroups => "DescribeGroups",
        ApiKey::DeleteGroups => "DeleteGroups",
        ApiKey::OffsetDelete => "OffsetDelete",
        ApiKey::ConsumerGroupHeartbeat => "ConsumerGroupHeartbeat",
        ApiKey::ConsumerGroupDescribe => "ConsumerGroupDescribe",
        ApiKey::AlterReplicaLogDirs => "AlterReplicaLogDirs",
        ApiKey::DescribeLogDirs => "DescribeLogDirs",
        _ => "other",
    }
}

/// Parses the header: the API key and version come first, and the header version follows
/// from them (not from the message version alone).
fn parse_header(frame: &Bytes) -> Result<Request, Error> {
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
    Ok(Request { header, api_key, version, body: buf, peer: None })
}

fn frame(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: BytesMut,
) -> Result<(Bytes, Bytes), Error> {
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
    let size = i32::try_from(header.len() + body.len()).map_err(|_| Error::ResponseTooLarge)?;
    let mut prefix = BytesMut::with_capacity(4 + header.len());
    prefix.put_i32(size);
    prefix.put_slice(&header);
    Ok((prefix.freeze(), body.freeze()))
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

pub(crate) fn api_version_list() -> Vec<ApiVersion> {
    SUPPORTED_APIS
        .iter()
        .map(|(key, min, max)| {
            ApiVersion::default()
                .with_api_key(*key as i16)
                .with_min_version(*min)
                .with_max_version(*max)
        })
        .collect()
}

/// Handles one request frame (without its size prefix).
pub(crate) async fn handle(
    broker: &Arc<Broker>,
    frame_bytes: Bytes,
    peer: Option<std::net::SocketAddr>,
) -> Outcome {
    let mut request = match parse_header(&frame_bytes) {
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
                    return unsupported_api_versions(i32::from_be_bytes([c0, c1, c2, c3]));
                }
            }
            return Outcome::Close(reason);
        }
    };
    request.peer = peer;
    let api_key = request.api_key;
    let Some((min, max)) = supported_versions(api_key) else {
        return Outcome::Close(Error::NotEnabled(api_key));
    };
    if !(min..=max).contains(&request.version) {
        if api_key == ApiKey::ApiVersions {
            return unsupported_api_versions(request.header.correlation_id);
        }
        return Outcome::Close(Error::UnsupportedVersion {
            api: api_key,
            version: request.version,
            min,
            max,
        });
    }
    let started = Instant::now();
    let name = api_name(api_key);
    let result = route(broker, &request).await;
    ::metrics::counter!("seglog_requests_total", "api" => name).increment(1);
    ::metrics::histogram!("seglog_request_seconds", "api" => name)
        .record(started.elapsed().as_secs_f64());
    match result {
        Ok(Reply::Body(body)) => {
            match frame(api_key, request.version, request.header.correlation_id, body) {
                Ok((prefix, body)) => Outcome::Respond(prefix, body),
                Err(reason) => Outcome::Close(reason),
            }
        }
        Ok(Reply::None) => Outcome::NoResponse,
        Err(reason) => {
            ::metrics::counter!("seglog_request_errors_total", "api" => name).increment(1);
            Outcome::Close(reason)
        }
    }
}

async fn route(broker: &Arc<Broker>, request: &Request) -> Result<Reply, Error> {
    let version = request.version;
    match request.api_key {
        ApiKey::ApiVersions => {
            handlers::api_versions(&request.decode::<ApiVersionsRequest>()?, version)
        }
        ApiKey::Metadata => {
            handlers::metadata(broker, request.decode::<MetadataRequest>()?, version).await
        }
        ApiKey::DescribeCluster => handlers::describe_cluster(
            broker,
            &request.decode::<DescribeClusterRequest>()?,
            version,
        ),
        ApiKey::Produce => {
            handlers::produce(broker, request.decode::<ProduceRequest>()?, version).await
        }
        ApiKey::Fetch => handlers::fetch(broker, request.decode::<FetchRequest>()?, version).await,
        ApiKey::ListOffsets => {
            handlers::list_offsets(broker, request.decode::<ListOffsetsRequest>()?, version).await
        }
        ApiKey::OffsetForLeaderEpoch => {
            let body = request.decode::<OffsetForLeaderEpochRequest>()?;
            handlers::offset_for_leader_epoch(broker, body, version).await
        }
        ApiKey::CreateTopics => {
            handlers::create_topics(broker, request.decode::<CreateTopicsRequest>()?, version).await
        }
        ApiKey::DeleteTopics => {
            handlers::delete_topics(broker, request.decode::<DeleteTopicsRequest>()?, version).await
        }
        ApiKey::CreatePartitions => {
            let body = request.decode::<CreatePartitionsRequest>()?;
            handlers::create_partitions(broker, body, version).await
        }
        ApiKey::DeleteRecords => {
            let body = request.decode::<DeleteRecordsRequest>()?;
            handlers::delete_records(broker, body, version).await
        }
        ApiKey::DescribeConfigs => {
            let body = request.decode::<DescribeConfigsRequest>()?;
            handlers::describe_configs(broker, &body, version)
        }
        ApiKey::AlterConfigs => {
            let body = request.decode::<AlterConfigsRequest>()?;
            handlers::alter_configs(broker, body, version).await
        }
        ApiKey::IncrementalAlterConfigs => {
            let body = request.decode::<IncrementalAlterConfigsRequest>()?;
            handlers::incremental_alter_configs(broker, body, version).await
        }
        ApiKey::InitProducerId => {
            let body = request.decode::<InitProducerIdRequest>()?;
            handlers::init_producer_id(broker, &body, version).await
        }
        ApiKey::DescribeLogDirs => {
            let body = request.decode::<kafka_protocol::messages::DescribeLogDirsRequest>()?;
            handlers::describe_log_dirs(broker, body, version).await
        }
        ApiKey::AlterReplicaLogDirs => {
            let body = request.decode::<kafka_protocol::messages::AlterReplicaLogDirsRequest>()?;
            handlers::alter_replica_log_dirs(broker, body, version).await
        }
        key if GROUP_APIS.contains(&key) => handlers::groups::route(broker, request).await,
        other => Err(Error::NotEnabled(other)),
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::protocol::HeaderVersion;

    use super::*;

    #[test]
    fn advertised_ranges_are_within_the_codec() {
        for (key, min, max) in SUPPORTED_APIS {
            let codec = key.valid_versions();
            assert!(min >= codec.min && max <= codec.max, "{key:?} {min}..={max} vs {codec:?}");
            assert!(min <= max, "{key:?}");
        }
    }

    #[test]
    fn header_of_fewer_than_four_bytes_is_refused() {
        let error = parse_header(&Bytes::from_static(&[0, 18, 0])).err().map(|e| e.to_string());
        assert_eq!(error.as_deref(), Some("a 3-byte request has no header"));
        let error =
            parse_header(&Bytes::from_static(&[0x7f, 0x7f, 0, 0])).err().map(|e| e.to_string());
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
