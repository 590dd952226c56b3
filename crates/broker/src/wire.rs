//! A minimal Kafka wire client (the `kafka-protocol` codecs over one connection, TCP or TLS,
//! one request in flight): what a cluster's broker sends to another (WriteTxnMarkers, the
//! verification of a transaction), and what the benches and `seglog cluster unregister` send.
//! Authentication on the connection is `security::client`'s.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response read (a broker's `socket.request.max.bytes`, 100 MiB).
const RESPONSE_BYTES_MAX: usize = 100 << 20;

/// Why a request got no response.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot encode the request: {0}")]
    Encode(String),
    #[error("a response of {size} bytes, above {RESPONSE_BYTES_MAX}")]
    TooLarge { size: usize },
    #[error("undecodable response: {0}")]
    Decode(String),
    #[error("TLS handshake with {server}: {source}")]
    Tls {
        server: String,
        #[source]
        source: std::io::Error,
    },
    #[error("SASL {mechanism} authentication failed: {message}")]
    Authentication { mechanism: String, message: String },
}

/// A byte stream a client speaks over: TCP, or TLS over TCP.
pub trait WireStream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> WireStream for T {}

/// A client connection speaking the wire protocol.
pub struct Client {
    stream: Box<dyn WireStream>,
    correlation_id: i32,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("correlation_id", &self.correlation_id)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A plaintext connection to `addr`, with Nagle off.
    pub async fn connect(addr: impl tokio::net::ToSocketAddrs) -> Result<Self, WireError> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self::over(stream))
    }

    /// A client over an established stream (a TLS session, say).
    pub fn over(stream: impl WireStream + 'static) -> Self {
        Self { stream: Box::new(stream), correlation_id: 0 }
    }

    /// Sends `request` at `version` and decodes the response.
    pub async fn send<R: Request>(
        &mut self,
        request: &R,
        version: i16,
    ) -> Result<R::Response, WireError> {
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("seglog")));
        let mut body = BytesMut::new();
        body.put_i32(0);
        header
            .encode(&mut body, R::header_version(version))
            .map_err(|error| WireError::Encode(error.to_string()))?;
        request.encode(&mut body, version).map_err(|error| WireError::Encode(error.to_string()))?;
        let size = i32::try_from(body.len() - 4)
            .map_err(|_| WireError::Encode("request too large".to_owned()))?;
        body[..4].copy_from_slice(&size.to_be_bytes());
        self.stream.write_all(&body).await?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).await?;
        let size = usize::try_from(i32::from_be_bytes(size)).unwrap_or(0);
        if size > RESPONSE_BYTES_MAX {
            return Err(WireError::TooLarge { size });
        }
        let mut frame = vec![0u8; size];
        self.stream.read_exact(&mut frame).await?;
        let mut frame = Bytes::from(frame);
        ResponseHeader::decode(&mut frame, R::Response::header_version(version))
            .map_err(|error| WireError::Decode(error.to_string()))?;
        R::Response::decode(&mut frame, version)
            .map_err(|error| WireError::Decode(error.to_string()))
    }
}
