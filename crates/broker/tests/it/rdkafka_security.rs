//! OAUTHBEARER with the rdkafka crate (librdkafka built from source) against the broker
//! in-process over SASL_PLAINTEXT: the client's token callback hands over an unsecured JWS
//! (`alg: none`, with `sub`, `iat` and `exp`), which the broker checks as Kafka's unsecured
//! validator does (no JWKS configured). A valid token produces and consumes; an expired one is
//! refused with Kafka's message.

#![allow(clippy::print_stderr, reason = "what librdkafka offers is said on stderr")]

use crate::common;

use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rdkafka::client::{ClientContext, OAuthToken};
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use seglog_broker::Server;

const TIMEOUT: Duration = Duration::from_secs(30);
const RECORDS: usize = 20;

/// An unsecured JWS (RFC 7515 appendix A.5) for `sub`, issued `iat` and expiring `exp`
/// seconds from now.
fn unsecured_jws(sub: &str, iat: i64, exp: i64) -> String {
    let now = i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs())
        .expect("seconds");
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
    let claims = serde_json::json!({"sub": sub, "iat": now + iat, "exp": now + exp});
    let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{claims}.")
}

/// A client context whose token callback returns one token, and which passes librdkafka's
/// errors on.
struct TokenContext {
    token: String,
    errors: Mutex<Sender<String>>,
}

impl TokenContext {
    fn new(token: String) -> (Self, Receiver<String>) {
        let (sender, receiver) = mpsc::channel();
        (Self { token, errors: Mutex::new(sender) }, receiver)
    }
}

impl ClientContext for TokenContext {
    const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;

    fn error(&self, error: KafkaError, reason: &str) {
        let errors = self.errors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = errors.send(format!("{error}: {reason}"));
    }

    fn generate_oauth_token(
        &self,
        _config: Option<&str>,
    ) -> Result<OAuthToken, Box<dyn std::error::Error>> {
        // librdkafka is told the token lives an hour: it would not hand over a token it knows
        // to be expired, and whether the `exp` claim has passed is the broker's to judge.
        let lifetime_ms = i64::try_from(
            (SystemTime::now() + Duration::from_hours(1))
                .duration_since(UNIX_EPOCH)
                .expect("clock")
                .as_millis(),
        )
        .expect("millis");
        Ok(OAuthToken { token: self.token.clone(), principal_name: "olivia".into(), lifetime_ms })
    }
}

impl ConsumerContext for TokenContext {}

fn config(server: &Server) -> ClientConfig {
    let addr = server.listener_addr("SASL_PLAINTEXT").expect("the SASL_PLAINTEXT listener");
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", addr.to_string())
        .set("broker.address.family", "v4")
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanisms", "OAUTHBEARER")
        .set_log_level(RDKafkaLogLevel::Critical);
    config
}

async fn start(dir: &std::path::Path) -> Server {
    common::start(
        dir,
        &[
            ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
            ("sasl.enabled.mechanisms", "OAUTHBEARER"),
            ("connection.failed.authentication.delay.ms", "0"),
        ],
    )
    .await
}

/// Whether this librdkafka has OAUTHBEARER (`builtin.features`), said on stderr.
fn has_oauthbearer() -> bool {
    let features = ClientConfig::new()
        .create_native_config()
        .and_then(|config| config.get("builtin.features"))
        .expect("builtin.features");
    let (_, version) = rdkafka::util::get_rdkafka_version();
    eprintln!("librdkafka {version} builtin.features={features}");
    features.split(',').any(|feature| feature == "sasl_oauthbearer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rdkafka_oauthbearer_with_an_unsecured_jws() {
    if !has_oauthbearer() {
        // librdkafka has OAUTHBEARER only with OpenSSL (the rdkafka crate's `ssl` feature);
        // without it, crates/cli/tests/it/security.rs's confluent-kafka case (oauth_cb) is the one.
        assert!(
            std::env::var_os("CI").is_none(),
            "the rdkafka crate's librdkafka lacks OAUTHBEARER"
        );
        eprintln!("SKIPPED: this librdkafka has no sasl_oauthbearer");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path()).await;
    let started = Instant::now();

    let (context, errors) = TokenContext::new(unsecured_jws("olivia", -10, 600));
    let producer: FutureProducer<TokenContext> = config(&server)
        .set("acks", "all")
        .set("message.timeout.ms", "30000")
        .create_with_context(context)
        .expect("producer");
    for i in 0..RECORDS {
        let value = format!("oauth-{i}");
        let record = FutureRecord::<(), _>::to("oauth").partition(0).payload(&value);
        let delivery = producer.send(record, TIMEOUT).await;
        let delivered = delivery.unwrap_or_else(|(error, _)| {
            panic!("{error}; client errors: {:?}", errors.try_iter().collect::<Vec<_>>())
        });
        assert_eq!(delivered.offset, i64::try_from(i).expect("small"));
    }

    let (context, errors) = TokenContext::new(unsecured_jws("olivia", -10, 600));
    let consumer: BaseConsumer<TokenContext> = config(&server)
        .set("group.id", "oauth-group")
        .set("enable.auto.commit", "false")
        .create_with_context(context)
        .expect("consumer");
    let mut assignment = TopicPartitionList::new();
    assignment.add_partition_offset("oauth", 0, Offset::Beginning).expect("assignment");
    consumer.assign(&assignment).expect("assign");
    let mut values = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    while values.len() < RECORDS && Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message.expect("a message");
            values.push(String::from_utf8_lossy(message.payload().expect("value")).into_owned());
        }
    }
    let want: Vec<String> = (0..RECORDS).map(|i| format!("oauth-{i}")).collect();
    assert_eq!(values, want, "client errors: {:?}", errors.try_iter().collect::<Vec<_>>());
    consumer.commit_consumer_state(rdkafka::consumer::CommitMode::Sync).expect("commit");
    eprintln!("rdkafka OAUTHBEARER: produced and consumed in {} ms", started.elapsed().as_millis());

    // Expired five minutes ago, beyond the default 30 s of clock skew: refused.
    let started = Instant::now();
    let (context, errors) = TokenContext::new(unsecured_jws("olivia", -600, -300));
    let consumer: BaseConsumer<TokenContext> =
        config(&server).create_with_context(context).expect("client");
    let deadline = Instant::now() + TIMEOUT;
    let refusal = loop {
        // Polling runs the token callback and the error callback.
        let _ = consumer.poll(Duration::from_millis(50));
        if let Ok(error) = errors.try_recv() {
            break error;
        }
        assert!(Instant::now() < deadline, "the expired token was not refused");
    };
    assert!(refusal.contains("SASL authentication error"), "{refusal}");
    assert!(
        refusal.contains(
            "Authentication failed during authentication due to invalid credentials with SASL \
             mechanism OAUTHBEARER"
        ),
        "{refusal}"
    );
    eprintln!(
        "rdkafka OAUTHBEARER: the expired token refused in {} ms",
        started.elapsed().as_millis()
    );
    drop(consumer);
    server.shutdown().await.expect("shutdown");
}
