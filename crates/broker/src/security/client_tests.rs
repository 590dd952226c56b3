//! The inter-broker client against a real `Server` on 127.0.0.1: TLS with the listener's
//! truststore and host-name check, SASL PLAIN and SCRAM logins from the JAAS configuration, a
//! refused login typed; and the configuration errors found before anything is served.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::{AlterUserScramCredentialsRequest, MetadataRequest};
use kafka_protocol::protocol::StrBytes;

use super::{ClientSecurity, ClientSecurityError};
use crate::security::scram::{ScramMechanism, salted_password};
use crate::wire::{Client, WireError};
use crate::{BrokerConfig, Server};

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                          username=\"broker\" password=\"plain-secret\" \
                          user_broker=\"plain-secret\";";
const SCRAM_JAAS: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required \
                          username=\"broker\" password=\"scram-secret\";";

/// A CA and a certificate for `localhost` signed by it: (keystore, truststore) PEM files.
fn certificates(dir: &std::path::Path, name: &str) -> (String, String) {
    let (keystore, truststore) = crate::security::sasl_tests::dev_certs(dir, name);
    (keystore.display().to_string(), truststore.display().to_string())
}

/// A broker's properties: PLAINTEXT, SSL and SASL_SSL listeners on free ports, PLAIN and
/// SCRAM-SHA-512 on SASL_SSL, with `extra` on top.
fn properties(dir: &std::path::Path, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let (keystore, truststore) = certificates(dir, "broker");
    let mut properties: BTreeMap<String, String> = [
        ("log.dirs", dir.join("data").display().to_string()),
        ("seglog.metrics.listener", String::new()),
        ("seglog.console.listener", String::new()),
        ("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0".into()),
        ("ssl.keystore.location", keystore),
        ("ssl.truststore.location", truststore),
        ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512".into()),
        ("listener.name.sasl_ssl.plain.sasl.jaas.config", PLAIN_JAAS.into()),
        ("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", SCRAM_JAAS.into()),
        ("sasl.mechanism.inter.broker.protocol", "PLAIN".into()),
        ("connection.failed.authentication.delay.ms", "0".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    for (key, value) in extra {
        properties.insert((*key).to_owned(), (*value).to_owned());
    }
    properties
}

fn inter_broker(
    properties: &BTreeMap<String, String>,
    listener: &str,
) -> Result<ClientSecurity, ClientSecurityError> {
    let config = BrokerConfig::from_properties(properties).expect("valid broker config");
    ClientSecurity::inter_broker(&config.security, listener)
}

/// Connects as a broker would and asks for the metadata: the brokers it lists.
async fn metadata_through(
    security: &ClientSecurity,
    host: &str,
    port: u16,
) -> Result<usize, WireError> {
    let mut client: Client = security.connect(host, port).await?;
    let response = client.send(&MetadataRequest::default().with_topics(None), 12).await?;
    Ok(response.brokers.len())
}

async fn add_scram_user(server: &Server, user: &str, password: &str) {
    let salt = b"a-salt-for-tests".to_vec();
    let salted = salted_password(ScramMechanism::Sha512, password, &salt, 4096);
    let mut request = AlterUserScramCredentialsRequest::default();
    request.upsertions.push(
        ScramCredentialUpsertion::default()
            .with_name(StrBytes::from_string(user.to_owned()))
            .with_mechanism(ScramMechanism::Sha512.kafka_type())
            .with_iterations(4096)
            .with_salt(Bytes::from(salt))
            .with_salted_password(Bytes::from(salted)),
    );
    let addr = server.listener_addr("PLAINTEXT").expect("listener");
    let mut client = Client::connect(addr).await.expect("connect");
    let response = client.send(&request, 0).await.expect("answered");
    assert_eq!(response.results[0].error_code, 0, "{response:?}");
}

#[tokio::test]
async fn a_broker_logs_in_over_sasl_ssl_with_plain_and_scram_and_a_wrong_login_is_typed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let properties = properties(dir.path(), &[]);
    let config = BrokerConfig::from_properties(&properties).expect("config");
    let server = Server::start(config).await.expect("broker starts");
    add_scram_user(&server, "broker", "scram-secret").await;
    let port = server.listener_addr("SASL_SSL").expect("listener").port();

    let plain = inter_broker(&properties, "SASL_SSL").expect("client side");
    assert_eq!(metadata_through(&plain, "localhost", port).await.expect("PLAIN login"), 1);

    let mut scram_properties = properties.clone();
    scram_properties.insert("sasl.mechanism.inter.broker.protocol".into(), "SCRAM-SHA-512".into());
    let scram = inter_broker(&scram_properties, "SASL_SSL").expect("client side");
    assert_eq!(metadata_through(&scram, "localhost", port).await.expect("SCRAM login"), 1);

    let wrong = SCRAM_JAAS.replace("scram-secret", "not-the-secret");
    scram_properties.insert("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config".into(), wrong);
    let refused = inter_broker(&scram_properties, "SASL_SSL").expect("client side");
    match metadata_through(&refused, "localhost", port).await {
        Err(WireError::Authentication { mechanism, message }) => {
            assert_eq!(mechanism, "SCRAM-SHA-512");
            assert_eq!(
                message,
                "Authentication failed during authentication due to invalid credentials with \
                 SASL mechanism SCRAM-SHA-512"
            );
        }
        other => panic!("a wrong password is a typed refusal, got {other:?}"),
    }
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn tls_checks_the_peer_and_its_host_name_unless_identification_is_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let properties = properties(dir.path(), &[]);
    let config = BrokerConfig::from_properties(&properties).expect("config");
    let server = Server::start(config).await.expect("broker starts");
    let port = server.listener_addr("SSL").expect("listener").port();

    let checked = inter_broker(&properties, "SSL").expect("client side");
    assert_eq!(metadata_through(&checked, "localhost", port).await.expect("localhost"), 1);
    let by_address = metadata_through(&checked, "127.0.0.1", port).await;
    assert!(
        std::matches!(&by_address, Err(WireError::Tls { server, .. }) if server == &format!("127.0.0.1:{port}")),
        "127.0.0.1 is not in the certificate: {by_address:?}"
    );

    let mut unchecked = properties.clone();
    unchecked
        .insert("listener.name.ssl.ssl.endpoint.identification.algorithm".into(), String::new());
    let unchecked = inter_broker(&unchecked, "SSL").expect("client side");
    assert_eq!(metadata_through(&unchecked, "127.0.0.1", port).await.expect("no name check"), 1);

    // A truststore of another CA does not trust the broker.
    let (_, other_ca) = certificates(dir.path(), "other");
    let mut strangers = properties.clone();
    strangers.insert("listener.name.ssl.ssl.truststore.location".into(), other_ca);
    let strangers = inter_broker(&strangers, "SSL").expect("client side");
    let refused = metadata_through(&strangers, "localhost", port).await;
    assert!(std::matches!(refused, Err(WireError::Tls { .. })), "{refused:?}");
    server.shutdown().await.expect("shutdown");
}

#[test]
fn the_client_side_is_refused_before_serving_with_what_and_where() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = properties(dir.path(), &[]);
    let error = |extra: &[(&str, &str)], removed: &[&str]| {
        let mut properties = base.clone();
        for key in removed {
            properties.remove(*key);
        }
        for (key, value) in extra {
            properties.insert((*key).to_owned(), (*value).to_owned());
        }
        inter_broker(&properties, "SASL_SSL").expect_err("refused").to_string()
    };
    assert_eq!(
        error(&[], &["sasl.mechanism.inter.broker.protocol"]),
        "inter-broker listener SASL_SSL: sasl.mechanism.inter.broker.protocol must be included in \
         sasl.enabled.mechanisms when SASL is used for inter-broker communication (GSSAPI is not \
         among PLAIN,SCRAM-SHA-512)"
    );
    assert_eq!(
        error(&[("sasl.mechanism.inter.broker.protocol", "OAUTHBEARER")], &[]),
        "inter-broker listener SASL_SSL: sasl.mechanism.inter.broker.protocol must be included in \
         sasl.enabled.mechanisms when SASL is used for inter-broker communication (OAUTHBEARER \
         is not among PLAIN,SCRAM-SHA-512)"
    );
    assert_eq!(
        error(
            &[
                ("sasl.enabled.mechanisms", "PLAIN,OAUTHBEARER"),
                ("sasl.mechanism.inter.broker.protocol", "OAUTHBEARER")
            ],
            &[]
        ),
        "inter-broker listener SASL_SSL: sasl.mechanism.inter.broker.protocol=OAUTHBEARER: a \
         broker logs in to another with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
    );
    assert_eq!(
        error(&[], &["listener.name.sasl_ssl.plain.sasl.jaas.config"]),
        "inter-broker listener SASL_SSL: listener.name.sasl_ssl.plain.sasl.jaas.config: not set \
         (nor sasl.jaas.config): the broker has no login"
    );
    let no_password = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                       username=\"broker\" user_broker=\"plain-secret\";";
    assert_eq!(
        error(&[("listener.name.sasl_ssl.plain.sasl.jaas.config", no_password)], &[]),
        "inter-broker listener SASL_SSL: listener.name.sasl_ssl.plain.sasl.jaas.config: jaas \
         config of org.apache.kafka.common.security.plain.PlainLoginModule has no password \
         option, which the broker logs in with"
    );
    assert_eq!(
        error(&[("listener.name.sasl_ssl.plain.sasl.jaas.config", SCRAM_JAAS)], &[]),
        "inter-broker listener SASL_SSL: listener.name.sasl_ssl.plain.sasl.jaas.config: jaas \
         config login module is 'org.apache.kafka.common.security.scram.ScramLoginModule', \
         expected org.apache.kafka.common.security.plain.PlainLoginModule"
    );
    let mut no_truststore = base.clone();
    no_truststore.remove("ssl.truststore.location");
    let refused = inter_broker(&no_truststore, "SSL").expect_err("refused").to_string();
    assert!(
        refused.starts_with("inter-broker listener SSL: ") && refused.contains("no truststore"),
        "{refused}"
    );
    assert_eq!(
        inter_broker(&base, "INTERNAL").expect_err("refused").to_string(),
        "inter-broker listener INTERNAL is not one of the broker's listeners"
    );
}
