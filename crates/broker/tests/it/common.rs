//! A broker on `127.0.0.1:0` over a temporary directory, and a minimal client that speaks the
//! wire protocol through the `kafka-protocol` crate's codecs.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::Path;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use seglog_broker::{BrokerConfig, Server};
use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Starts a broker on an ephemeral port over `dir`, with `extra` server.properties keys.
pub async fn start(dir: &Path, extra: &[(&str, &str)]) -> Server {
    let mut properties: BTreeMap<String, String> = BTreeMap::new();
    properties.insert("listeners".into(), "PLAINTEXT://127.0.0.1:0".into());
    properties.insert("log.dirs".into(), dir.display().to_string());
    properties.insert("seglog.metrics.listener".into(), String::new());
    properties.insert("seglog.console.listener".into(), String::new());
    for (key, value) in extra {
        properties.insert((*key).to_owned(), (*value).to_owned());
    }
    let config = BrokerConfig::from_properties(&properties).expect("test config is valid");
    Server::start(config).await.expect("broker starts")
}

/// One client connection.
pub struct Client {
    stream: TcpStream,
    correlation_id: i32,
}

impl Client {
    pub async fn connect(server: &Server) -> Self {
        let stream = TcpStream::connect(server.local_addr()).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Self { stream, correlation_id: 0 }
    }

    /// Encodes `request` at `version`, sends it, and returns the encoded body of the response
    /// after checking its header.
    pub async fn send_raw_body<R: Request>(&mut self, request: &R, version: i16) -> Bytes {
        self.correlation_id += 1;
        let api_key = ApiKey::try_from(R::KEY).expect("known key");
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("seglog-test")));
        let mut body = BytesMut::new();
        header.encode(&mut body, R::header_version(version)).expect("header encodes");
        request.encode(&mut body, version).expect("request encodes");
        self.write_frame(&body).await;
        let mut frame = self.read_frame().await.expect("a response, not a closed connection");
        let header_version =
            if api_key == ApiKey::ApiVersions { 0 } else { R::Response::header_version(version) };
        let response_header =
            ResponseHeader::decode(&mut frame, header_version).expect("response header decodes");
        assert_eq!(response_header.correlation_id, self.correlation_id, "correlation id");
        frame
    }

    /// Sends `request` and decodes the response, which must consume the whole frame.
    pub async fn send<R: Request>(&mut self, request: &R, version: i16) -> R::Response {
        let mut body = self.send_raw_body(request, version).await;
        let response = R::Response::decode(&mut body, version).expect("response decodes");
        assert!(body.is_empty(), "{} trailing bytes in the response", body.len());
        response
    }

    /// Sends a request that gets no response (a produce with acks=0).
    pub async fn send_no_response<R: Request>(&mut self, request: &R, version: i16) {
        self.correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id);
        let mut body = BytesMut::new();
        header.encode(&mut body, R::header_version(version)).expect("header encodes");
        request.encode(&mut body, version).expect("request encodes");
        self.write_frame(&body).await;
    }

    pub async fn write_frame(&mut self, body: &[u8]) {
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(i32::try_from(body.len()).expect("small frame"));
        frame.put_slice(body);
        self.stream.write_all(&frame).await.expect("write");
    }

    pub async fn write_bytes(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }

    /// Reads one response frame; `None` when the broker closed the connection.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        let mut size = [0u8; 4];
        if self.stream.read_exact(&mut size).await.is_err() {
            return None;
        }
        let mut frame = vec![0u8; usize::try_from(i32::from_be_bytes(size)).ok()?];
        self.stream.read_exact(&mut frame).await.ok()?;
        Some(Bytes::from(frame))
    }

    /// Whether the broker closed the connection (reads end of stream or a reset).
    pub async fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        match self.stream.read(&mut byte).await {
            Ok(0) | Err(_) => true,
            Ok(_) => false,
        }
    }
}

/// One uncompressed or compressed v2 batch of `values`, timestamps from `first_timestamp`.
pub fn batch(codec: Compression, values: &[&str], first_timestamp: i64) -> Bytes {
    let mut builder = RecordBatchBuilder::new(codec);
    for (i, value) in values.iter().enumerate() {
        let key = format!("k{i}");
        builder
            .push(
                first_timestamp + i64::try_from(i).expect("small"),
                Some(key.as_bytes()),
                Some(value.as_bytes()),
                &[],
            )
            .expect("record encodes");
    }
    Bytes::from(builder.build().expect("batch builds"))
}

/// Every record of a fetched record set: (offset, value).
pub fn records(bytes: &[u8]) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    for positioned in Batches::new(bytes) {
        let positioned = positioned.expect("fetched batch decodes");
        let records = positioned.batch.records(DecodeLimits::default()).expect("records decode");
        for record in &records {
            let record = record.expect("record decodes");
            out.push((
                record.offset,
                String::from_utf8_lossy(record.value.unwrap_or_default()).into_owned(),
            ));
        }
    }
    out
}

/// Reads an i16 at the front of `bytes` (for raw checks).
pub fn first_i16(mut bytes: Bytes) -> i16 {
    bytes.get_i16()
}
