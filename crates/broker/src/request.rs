//! One decoded request and what its handler returns (Kafka's `RequestChannel.Request` and the
//! response send): the header, the API key and version, the body still encoded until the
//! handler asks for its type, and the encoded response body.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::error::Error;

/// A request whose header is read, with what the response needs.
pub(crate) struct Request {
    pub(crate) header: RequestHeader,
    pub(crate) api_key: ApiKey,
    pub(crate) version: i16,
    pub(crate) body: Bytes,
    /// Who sent it, from where, through which listener.
    pub(crate) session: std::sync::Arc<crate::security::Session>,
}

/// What a handler returns: an encoded body, one whose records stay in their files until
/// they are sent (a Fetch on a plaintext listener), or no response at all.
pub(crate) enum Reply {
    Body(BytesMut),
    Files(crate::file_send::FileResponse),
    None,
}

impl Request {
    /// The client's address as Kafka shows it (`/127.0.0.1`); only the group APIs need it,
    /// so it is formatted there, not for every request.
    pub(crate) fn client_host(&self) -> String {
        format!("/{}", self.session.host())
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
