//! The SASL and TLS paths end to end: a real `Server` on 127.0.0.1, a client speaking Kafka's
//! SaslHandshake / SaslAuthenticate over TCP or TLS (SCRAM through the module's own client).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey, MetadataRequest,
    MetadataResponse, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::scram::{ScramClient, ScramMechanism, salted_password};
use crate::{BrokerConfig, Server};

async fn start(dir: &std::path::Path, extra: &[(&str, &str)]) -> Server {
    let mut properties: BTreeMap<String, String> = BTreeMap::new();
    properties.insert("log.dirs".into(), dir.display().to_string());
    properties.insert("seglog.metrics.listener".into(), String::new());
    properties.insert("seglog.console.listener".into(), String::new());
    properties
        .insert("listeners".into(), "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0".into());
    properties.insert("connection.failed.authentication.delay.ms".into(), "0".into());
    for (key, value) in extra {
        properties.insert((*key).to_owned(), (*value).to_owned());
    }
    let config = BrokerConfig::from_properties(&properties).expect("test config is valid");
    Server::start(config).await.expect("broker starts")
}

struct Client<S> {
    stream: S,
    correlation_id: i32,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    fn new(stream: S) -> Self {
        Self { stream, correlation_id: 0 }
    }

    async fn write_frame(&mut self, body: &[u8]) -> std::io::Result<()> {
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_u32(u32::try_from(body.len()).expect("small"));
        frame.put_slice(body);
        self.stream.write_all(&frame).await?;
        self.stream.flush().await
    }

    async fn read_frame(&mut self) -> Option<Bytes> {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).await.ok()?;
        let mut frame = vec![0u8; usize::try_from(u32::from_be_bytes(size)).ok()?];
        self.stream.read_exact(&mut frame).await.ok()?;
        Some(Bytes::from(frame))
    }

    /// Sends a request; `None` when the broker closed the connection instead of answering.
    async fn send<R: Request>(&mut self, request: &R, version: i16) -> Option<R::Response> {
        self.correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("sasl-test")));
        let mut body = BytesMut::new();
        header.encode(&mut body, R::header_version(version)).expect("header");
        request.encode(&mut body, version).expect("request");
        self.write_frame(&body).await.ok()?;
        let mut frame = self.read_frame().await?;
        let api_key = ApiKey::try_from(R::KEY).expect("key");
        let header_version =
            if api_key == ApiKey::ApiVersions { 0 } else { R::Response::header_version(version) };
        let header = ResponseHeader::decode(&mut frame, header_version).expect("response header");
        assert_eq!(header.correlation_id, self.correlation_id);
        Some(R::Response::decode(&mut frame, version).expect("response decodes"))
    }

    async fn handshake(&mut self, mechanism: &str) -> SaslHandshakeResponse {
        let request = SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_string(mechanism.to_owned()));
        self.send(&request, 1).await.expect("handshake answered")
    }

    async fn authenticate(&mut self, token: Vec<u8>) -> Option<SaslAuthenticateResponse> {
        self.send(&SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token)), 2).await
    }

    /// A whole SCRAM exchange; the final answer's error code.
    async fn scram(
        &mut self,
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
    ) -> (i16, Option<String>) {
        let handshake = self.handshake(mechanism.name()).await;
        assert_eq!(handshake.error_code, 0, "{handshake:?}");
        let mut client = ScramClient::new(mechanism, user, password).expect("client");
        let first = self.authenticate(client.client_first()).await.expect("server-first");
        if first.error_code != 0 {
            return (first.error_code, message_of(first.error_message));
        }
        let last = client.client_final(&first.auth_bytes).expect("client-final");
        let last = self.authenticate(last).await.expect("server-final");
        if last.error_code == 0 {
            client
                .verify_server_final(&last.auth_bytes)
                .expect("the server proves it knows the key");
        }
        (last.error_code, message_of(last.error_message))
    }

    async fn metadata(&mut self) -> Option<MetadataResponse> {
        self.send(&MetadataRequest::default().with_topics(None), 12).await
    }

    async fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        match self.stream.read(&mut byte).await {
            Ok(0) | Err(_) => true,
            Ok(_) => false,
        }
    }
}

/// An error message, `None` when absent or empty (Kafka sends "" with NONE).
fn message_of(message: Option<StrBytes>) -> Option<String> {
    message.map(|m| m.to_string()).filter(|m| !m.is_empty())
}

async fn connect(server: &Server, listener: &str) -> Client<TcpStream> {
    let addr = server.listener_addr(listener).expect("listener");
    let stream = TcpStream::connect(addr).await.expect("connect");
    Client::new(stream)
}

/// Stores a SCRAM credential through AlterUserScramCredentials on the PLAINTEXT listener.
async fn add_scram_user(server: &Server, mechanism: ScramMechanism, user: &str, password: &str) {
    let salt = b"a-salt-for-tests".to_vec();
    let salted = salted_password(mechanism, password, &salt, 4096);
    let mut request = AlterUserScramCredentialsRequest::default();
    request.upsertions.push(
        ScramCredentialUpsertion::default()
            .with_name(StrBytes::from_string(user.to_owned()))
            .with_mechanism(mechanism.kafka_type())
            .with_iterations(4096)
            .with_salt(Bytes::from(salt))
            .with_salted_password(Bytes::from(salted)),
    );
    let mut client = connect(server, "PLAINTEXT").await;
    let response: AlterUserScramCredentialsResponse =
        client.send(&request, 0).await.expect("answered");
    assert_eq!(response.results.len(), 1);
    assert_eq!(response.results[0].error_code, 0, "{response:?}");
}

#[tokio::test]
async fn scram_authenticates_and_a_wrong_password_is_refused_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    for mechanism in ScramMechanism::ALL {
        add_scram_user(&server, mechanism, "alice", "alice-secret").await;
        let mut client = connect(&server, "SASL_PLAINTEXT").await;
        assert_eq!(client.scram(mechanism, "alice", "alice-secret").await, (0, None));
        let metadata = client.metadata().await.expect("served once authenticated");
        assert_eq!(metadata.brokers.len(), 1);
        assert_eq!(
            metadata.brokers[0].port,
            i32::from(server.listener_addr("SASL_PLAINTEXT").expect("bound").port()),
            "Metadata advertises the listener the request came through"
        );
        let expected = format!(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
            mechanism.name()
        );
        for (user, password) in [("alice", "wrong"), ("mallory", "alice-secret")] {
            let mut client = connect(&server, "SASL_PLAINTEXT").await;
            let (code, message) = client.scram(mechanism, user, password).await;
            assert_eq!(code, ResponseError::SaslAuthenticationFailed.code(), "{user}");
            assert_eq!(message.as_deref(), Some(expected.as_str()), "the same text for {user}");
            assert!(client.is_closed().await, "closed after the failure");
        }
    }
    server.shutdown().await.expect("shutdown");
    // The credentials are durable: a restart authenticates the same users.
    let server = start(dir.path(), &[]).await;
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    assert_eq!(client.scram(ScramMechanism::Sha512, "alice", "alice-secret").await, (0, None));
    let stored =
        std::fs::read_to_string(dir.path().join(super::store::SECURITY_FILE)).expect("stored");
    assert!(!stored.contains("alice-secret"), "no password is stored");
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn plain_users_from_jaas_and_the_scram_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jaas = r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";"#;
    let server = start(
        dir.path(),
        &[
            ("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
        ],
    )
    .await;
    let plain = |user: &str, password: &str| format!("\0{user}\0{password}").into_bytes();
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    assert_eq!(client.handshake("PLAIN").await.error_code, 0);
    let done = client.authenticate(plain("bob", "bob-secret")).await.expect("answered");
    assert_eq!(done.error_code, 0, "{done:?}");
    assert!(client.metadata().await.is_some());
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    assert_eq!(client.handshake("PLAIN").await.error_code, 0);
    let refused = client.authenticate(plain("bob", "nope")).await.expect("answered");
    assert_eq!(refused.error_code, ResponseError::SaslAuthenticationFailed.code());
    assert!(client.is_closed().await);
    // A mechanism the listener does not enable: UNSUPPORTED_SASL_MECHANISM with the list.
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    let handshake = client.handshake("SCRAM-SHA-512").await;
    assert_eq!(handshake.error_code, ResponseError::UnsupportedSaslMechanism.code());
    let listed: Vec<String> = handshake.mechanisms.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["PLAIN", "SCRAM-SHA-256"]);
    assert!(client.is_closed().await);
    server.shutdown().await.expect("shutdown");

    // Without a PLAIN user list, PLAIN checks the SCRAM credentials.
    let dir = tempfile::tempdir().expect("tempdir");
    let server =
        start(dir.path(), &[("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN")])
            .await;
    add_scram_user(&server, ScramMechanism::Sha256, "carol", "carol-secret").await;
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    assert_eq!(client.handshake("PLAIN").await.error_code, 0);
    assert_eq!(
        client.authenticate(plain("carol", "carol-secret")).await.expect("answered").error_code,
        0
    );
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn nothing_but_api_versions_and_the_handshake_before_authentication() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[("sasl.server.max.receive.size", "1024")]).await;
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    let versions: kafka_protocol::messages::ApiVersionsResponse = client
        .send(&kafka_protocol::messages::ApiVersionsRequest::default(), 2)
        .await
        .expect("served");
    assert_eq!(versions.error_code, 0);
    assert!(
        client.metadata().await.is_none(),
        "Metadata before authentication closes the connection"
    );
    // A frame larger than sasl.server.max.receive.size before authentication is cut off
    // without reading it.
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    client.stream.write_all(&(64u32 << 20).to_be_bytes()).await.expect("write size");
    assert!(client.is_closed().await);
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_v0_handshake_carries_raw_tokens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[("sasl.enabled.mechanisms", "SCRAM-SHA-256")]).await;
    add_scram_user(&server, ScramMechanism::Sha256, "dave", "dave-secret").await;
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("SCRAM-SHA-256"));
    assert_eq!(client.send(&request, 0).await.expect("handshake").error_code, 0);
    let mut scram =
        ScramClient::new(ScramMechanism::Sha256, "dave", "dave-secret").expect("client");
    client.write_frame(&scram.client_first()).await.expect("write");
    let first = client.read_frame().await.expect("server-first, raw");
    client.write_frame(&scram.client_final(&first).expect("final")).await.expect("write");
    let last = client.read_frame().await.expect("server-final, raw");
    scram.verify_server_final(&last).expect("server proof");
    assert!(client.metadata().await.is_some());
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn sessions_expire_without_reauthentication_and_reauthenticate_on_the_same_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[("connections.max.reauth.ms", "300")]).await;
    add_scram_user(&server, ScramMechanism::Sha256, "erin", "erin-secret").await;
    add_scram_user(&server, ScramMechanism::Sha256, "frank", "frank-secret").await;
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    let handshake = client.handshake("SCRAM-SHA-256").await;
    assert_eq!(handshake.error_code, 0);
    let mut scram =
        ScramClient::new(ScramMechanism::Sha256, "erin", "erin-secret").expect("client");
    let first = client.authenticate(scram.client_first()).await.expect("first");
    let last = client
        .authenticate(scram.client_final(&first.auth_bytes).expect("final"))
        .await
        .expect("last");
    assert_eq!(last.error_code, 0);
    assert_eq!(
        last.session_lifetime_ms, 300,
        "KIP-368: the session lifetime is told to the client"
    );
    // Re-authentication as the same principal keeps the connection.
    assert_eq!(client.scram(ScramMechanism::Sha256, "erin", "erin-secret").await, (0, None));
    assert!(client.metadata().await.is_some());
    // Another principal may not take over the connection.
    let (code, message) = client.scram(ScramMechanism::Sha256, "frank", "frank-secret").await;
    assert_eq!(code, ResponseError::SaslAuthenticationFailed.code());
    assert_eq!(
        message.as_deref(),
        Some(
            "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
        )
    );
    // A session that expired without re-authentication is closed at its next request.
    let mut client = connect(&server, "SASL_PLAINTEXT").await;
    assert_eq!(client.scram(ScramMechanism::Sha256, "erin", "erin-secret").await, (0, None));
    let expired = tokio::time::Instant::now() + std::time::Duration::from_millis(350);
    tokio::time::sleep_until(expired).await;
    assert!(client.metadata().await.is_none(), "closed once the session expired");
    server.shutdown().await.expect("shutdown");
}

/// A CA and a certificate for `localhost` signed by it, written under `dir` as
/// `<name>-keystore.pem` (key and chain) and `<name>-ca.pem`: (keystore, truststore).
pub(super) fn dev_certs(
    dir: &std::path::Path,
    name: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca =
        CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("key")).expect("ca");
    let params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &ca).expect("cert");
    let keystore = dir.join(format!("{name}-keystore.pem"));
    std::fs::write(&keystore, format!("{}{}", key.serialize_pem(), cert.pem())).expect("write");
    let ca_path = dir.join(format!("{name}-ca.pem"));
    std::fs::write(&ca_path, ca.pem()).expect("write");
    (keystore, ca_path)
}

/// A TLS connector that trusts only the CA in `ca` (PEM).
fn connector(ca: &std::path::Path) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(ca).expect("ca") {
        roots.add(cert.expect("cert")).expect("root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

async fn tls_handshake(
    server: &Server,
    ca: &std::path::Path,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(server.listener_addr("SASL_SSL").expect("listener")).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    connector(ca).connect(name, tcp).await
}

async fn tls_connect(
    server: &Server,
    ca: &std::path::Path,
) -> Client<tokio_rustls::client::TlsStream<TcpStream>> {
    Client::new(tls_handshake(server, ca).await.expect("tls handshake"))
}

#[tokio::test]
async fn sasl_ssl_with_scram_and_a_slow_handshake_is_cut_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = tempfile::tempdir().expect("tempdir");
    let (keystore, ca) = dev_certs(certs.path(), "server");
    let keystore = keystore.display().to_string();
    let server = start(
        dir.path(),
        &[
            ("listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"),
            ("ssl.keystore.location", &keystore),
            ("seglog.authentication.timeout.ms", "300"),
        ],
    )
    .await;
    add_scram_user(&server, ScramMechanism::Sha512, "grace", "grace-secret").await;
    let mut client = tls_connect(&server, &ca).await;
    assert_eq!(client.scram(ScramMechanism::Sha512, "grace", "grace-secret").await, (0, None));
    assert!(client.metadata().await.is_some());
    // A client that opens TCP and never starts TLS is closed after the authentication timeout.
    let mut idle =
        TcpStream::connect(server.listener_addr("SASL_SSL").expect("listener")).await.expect("tcp");
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), idle.read(&mut byte)).await;
    match read {
        Ok(Ok(0) | Err(_)) => {}
        other => panic!("closed by the broker, not by the test's bound: {other:?}"),
    }
    server.shutdown().await.expect("shutdown");
}

fn produce_request(
    topic: &str,
    values: usize,
    value_bytes: usize,
) -> kafka_protocol::messages::ProduceRequest {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    let mut builder = seglog_format::RecordBatchBuilder::new(seglog_format::Compression::None);
    let value = vec![b'x'; value_bytes];
    for i in 0..values {
        builder.push(i64::try_from(i).expect("small"), None, Some(&value), &[]).expect("record");
    }
    let records = Bytes::from(builder.build().expect("batch"));
    kafka_protocol::messages::ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(kafka_protocol::messages::TopicName(StrBytes::from_string(
                    topic.to_owned(),
                )))
                .with_partition_data(vec![
                    PartitionProduceData::default().with_index(0).with_records(Some(records)),
                ]),
        ])
}

/// A `producer_byte_rate` quota set through AlterClientQuotas throttles Produce (KIP-219:
/// `throttle_time_ms` in the answer, and the connection is muted), is described by
/// DescribeClientQuotas, and survives a restart.
#[tokio::test]
async fn a_producer_byte_rate_quota_throttles_and_is_durable() {
    use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
    use kafka_protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
    let dir = tempfile::tempdir().expect("tempdir");
    let windows = [("quota.window.num", "2"), ("quota.window.size.seconds", "1")];
    let server = start(dir.path(), &windows).await;
    let mut client = connect(&server, "PLAINTEXT").await;
    let topic = kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
        .with_name(Some(kafka_protocol::messages::TopicName(StrBytes::from_static_str("quota"))));
    let created = client.send(&MetadataRequest::default().with_topics(Some(vec![topic])), 12).await;
    assert_eq!(created.expect("answered").topics[0].error_code, 0, "auto-created");
    // Without a quota, nothing is throttled.
    let answer = client.send(&produce_request("quota", 10, 1000), 9).await.expect("answered");
    assert_eq!(answer.throttle_time_ms, 0);
    let entry = EntryData::default()
        .with_entity(vec![
            EntityData::default()
                .with_entity_type(StrBytes::from_static_str("user"))
                .with_entity_name(None),
        ])
        .with_ops(vec![
            OpData::default()
                .with_key(StrBytes::from_static_str("producer_byte_rate"))
                .with_value(80_000.0),
        ]);
    let altered = client
        .send(&AlterClientQuotasRequest::default().with_entries(vec![entry]), 1)
        .await
        .expect("answered");
    assert_eq!(altered.entries[0].error_code, 0, "{altered:?}");
    // About 101 KB against 80 KB/s over a window of at least one second: Kafka's
    // (rate - bound) / bound * window, about 270 ms.
    let answer = client.send(&produce_request("quota", 100, 1000), 9).await.expect("answered");
    assert_eq!(answer.responses[0].partition_responses[0].error_code, 0, "appended all the same");
    assert!(
        (200..400).contains(&answer.throttle_time_ms),
        "throttled: {}",
        answer.throttle_time_ms
    );
    server.shutdown().await.expect("shutdown");

    let server = start(dir.path(), &windows).await;
    let mut client = connect(&server, "PLAINTEXT").await;
    let described = client
        .send(
            &DescribeClientQuotasRequest::default().with_components(vec![
                ComponentData::default()
                    .with_entity_type(StrBytes::from_static_str("user"))
                    .with_match_type(1)
                    .with_match(None),
            ]),
            1,
        )
        .await
        .expect("answered");
    assert_eq!(described.error_code, 0, "{described:?}");
    let entries = described.entries.expect("entries");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].values[0].key.as_str(), "producer_byte_rate");
    assert!((entries[0].values[0].value - 80_000.0).abs() < f64::EPSILON);
    server.shutdown().await.expect("shutdown");
}

/// Authentication outcomes are counted per listener, mechanism and result in `/metrics`, and
/// no password appears there.
#[tokio::test]
async fn authentications_are_counted_and_metrics_hold_no_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jaas = r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";"#;
    let server = start(
        dir.path(),
        &[
            ("seglog.metrics.listener", "127.0.0.1:0"),
            ("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
        ],
    )
    .await;
    for password in ["bob-secret", "not-bobs-password"] {
        let mut client = connect(&server, "SASL_PLAINTEXT").await;
        assert_eq!(client.handshake("PLAIN").await.error_code, 0);
        let token = format!("\0bob\0{password}").into_bytes();
        let _ = client.authenticate(token).await;
    }
    let addr = server.metrics_addr().expect("metrics served");
    let mut http = TcpStream::connect(addr).await.expect("connect");
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await.expect("write");
    let mut text = String::new();
    http.read_to_string(&mut text).await.expect("read");
    for result in ["success", "failure"] {
        let needle = format!(
            "seglog_authentications_total{{listener=\"SASL_PLAINTEXT\",mechanism=\"PLAIN\",result=\"{result}\"}}"
        );
        assert!(text.contains(&needle), "missing {needle} in:\n{text}");
    }
    assert!(!text.contains("bob-secret") && !text.contains("not-bobs-password"));
    server.shutdown().await.expect("shutdown");
}

/// A keystore replaced on disk is served to new connections without a restart
/// (`seglog.ssl.reload.interval.ms`); a connection opened before keeps working.
#[tokio::test]
async fn a_replaced_keystore_is_used_without_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = tempfile::tempdir().expect("tempdir");
    let new = tempfile::tempdir().expect("tempdir");
    let (old_keystore, old_ca) = dev_certs(old.path(), "old");
    let (new_keystore, new_ca) = dev_certs(new.path(), "new");
    let keystore = dir.path().join("server.pem");
    std::fs::copy(&old_keystore, &keystore).expect("copy");
    let location = keystore.display().to_string();
    let logs = tempfile::tempdir().expect("tempdir");
    let server = start(
        logs.path(),
        &[
            ("listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"),
            ("ssl.keystore.location", &location),
        ],
    )
    .await;
    add_scram_user(&server, ScramMechanism::Sha256, "heidi", "heidi-secret").await;
    let mut before = tls_connect(&server, &old_ca).await;
    assert_eq!(before.scram(ScramMechanism::Sha256, "heidi", "heidi-secret").await, (0, None));
    // Replace the file (a rename, as a certificate manager does).
    let staged = dir.path().join("server.pem.new");
    std::fs::copy(&new_keystore, &staged).expect("copy");
    std::fs::rename(&staged, &keystore).expect("rename");
    assert!(!try_tls_connect(&server, &new_ca).await, "not before the reload");
    // What the broker's reload tick (`seglog.ssl.reload.interval.ms`) runs, run now.
    let broker = Arc::clone(server.broker());
    broker.security.reload_certificates(broker.config());
    assert!(try_tls_connect(&server, &new_ca).await, "the new keystore is served");
    assert!(!try_tls_connect(&server, &old_ca).await, "new connections no longer get the old key");
    // A file that does not load keeps the current key (a half-written file must not stop TLS).
    std::fs::write(&keystore, "not pem").expect("write");
    broker.security.reload_certificates(broker.config());
    assert!(try_tls_connect(&server, &new_ca).await, "the last good keystore stays in use");
    assert!(before.metadata().await.is_some(), "the connection opened before keeps working");
    server.shutdown().await.expect("shutdown");
}

async fn try_tls_connect(server: &Server, ca: &std::path::Path) -> bool {
    tls_handshake(server, ca).await.is_ok()
}

/// `max.connections.per.ip`: a client address past its limit is closed at once, the others
/// are served; `max.connections.per.ip.overrides` raises it for one address.
#[tokio::test]
async fn connections_per_ip_are_limited_with_overrides() {
    use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
    for (overrides, allowed) in [("", 2), ("127.0.0.1:3", 3)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = start(
            dir.path(),
            &[("max.connections.per.ip", "2"), ("max.connections.per.ip.overrides", overrides)],
        )
        .await;
        let mut open = Vec::new();
        for _ in 0..allowed {
            let mut client = connect(&server, "PLAINTEXT").await;
            let versions: Option<ApiVersionsResponse> =
                client.send(&ApiVersionsRequest::default(), 2).await;
            assert!(versions.is_some(), "within the limit");
            open.push(client);
        }
        let mut over = connect(&server, "PLAINTEXT").await;
        assert!(over.is_closed().await, "{overrides:?}: connection {} is refused", allowed + 1);
        let mut first = open.remove(0);
        assert!(first.metadata().await.is_some(), "the others are still served");
        server.shutdown().await.expect("shutdown");
    }
}
