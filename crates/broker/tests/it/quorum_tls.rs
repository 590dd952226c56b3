//! The quorum over the controller listener's SSL (`cluster::raft::transport`): two voters
//! replicate over mutual TLS; a client without a certificate, with one from another CA, or
//! with a principal outside `super.users` gets no answer, and the voters keep serving; a
//! controller listener that would leave the quorum unauthenticated is refused at start.

#![allow(clippy::unwrap_used, reason = "a test: a failed call is the failure")]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use seglog_broker::cluster::controller::ControllerConfig;
use seglog_broker::cluster::raft::network::fetch_status;
use seglog_broker::cluster::raft::node::{MetadataNode, QuorumTimings};
use seglog_broker::cluster::raft::transport::QuorumTransport;
use seglog_storage::io::StdFs;
use tokio::net::TcpListener;

/// A CA: its PEM file and its issuer.
fn authority(dir: &Path, name: &str) -> (String, CertifiedIssuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, format!("{name} CA"));
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let path = dir.join(format!("{name}-ca.pem"));
    std::fs::write(&path, ca.pem()).unwrap();
    (path.display().to_string(), ca)
}

/// A keystore (key and chain) for `CN=<common_name>`, valid for 127.0.0.1 and localhost.
fn keystore(dir: &Path, common_name: &str, ca: &CertifiedIssuer<'static, KeyPair>) -> String {
    let hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let mut params = CertificateParams::new(hosts).unwrap();
    params.distinguished_name.push(DnType::CommonName, common_name);
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, ca).unwrap();
    let path = dir.join(format!("{common_name}.pem"));
    std::fs::write(&path, format!("{}{}", key.serialize_pem(), cert.pem())).unwrap();
    path.display().to_string()
}

/// A node's controller-listener settings: SSL with client certificates required, an
/// authorizer whose only super user is `User:CN=node`.
fn node_properties(keystore: &str, truststore: &str) -> BTreeMap<String, String> {
    [
        ("controller.listener.names", "CONTROLLER"),
        ("listener.security.protocol.map", "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT"),
        ("listener.name.controller.ssl.keystore.location", keystore),
        ("listener.name.controller.ssl.truststore.location", truststore),
        ("listener.name.controller.ssl.client.auth", "required"),
        ("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
        ("super.users", "User:CN=node"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

async fn start(id: u64, dir: &Path, transport: &Arc<QuorumTransport>) -> MetadataNode {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let timings = QuorumTimings::default().for_voter(usize::try_from(id - 1).unwrap(), 2);
    let listener = (listener, Arc::clone(transport));
    MetadataNode::start(id, Arc::new(StdFs), dir, listener, timings, ControllerConfig::default())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_over_mutual_tls_admits_only_its_members() {
    let dir = tempfile::tempdir().unwrap();
    let (truststore, ca) = authority(dir.path(), "cluster");
    let node_keystore = keystore(dir.path(), "node", &ca);
    let transport = QuorumTransport::from_properties(&node_properties(&node_keystore, &truststore))
        .expect("SSL with client certificates is a quorum transport");
    assert!(transport.is_tls());
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    let voter = start(1, &one, &transport).await;
    let other = start(2, &two, &transport).await;
    voter.bootstrap().await.unwrap();
    // The first membership committed before the second voter is added (openraft refuses a
    // change while one is under way).
    let leading = voter
        .raft()
        .wait(Some(MetadataNode::WAIT))
        .metrics(|m| m.current_leader == Some(1) && m.last_applied.is_some(), "leading")
        .await;
    assert!(leading.is_ok(), "voter 1 leads its one-voter quorum: {leading:?}");
    voter.add_voter(2, other.addr()).await.expect("the second voter joins over TLS");
    let caught_up = other
        .raft()
        .wait(Some(MetadataNode::WAIT))
        .metrics(|m| m.current_leader == Some(1) && m.last_applied.is_some(), "replicated")
        .await;
    assert!(caught_up.is_ok(), "voter 2 follows voter 1 over TLS: {caught_up:?}");

    let addr = voter.addr().to_owned();
    let ask = |transport: Arc<QuorumTransport>| {
        let addr = addr.clone();
        async move { fetch_status(&addr, Duration::from_secs(5), &transport).await }
    };
    let status = ask(Arc::clone(&transport)).await.expect("a member is answered");
    assert_eq!(status.voters, vec![1, 2]);

    let plain = ask(QuorumTransport::plaintext()).await;
    assert!(plain.is_err(), "a plaintext client gets no answer: {plain:?}");

    let (other_truststore, other_ca) = authority(dir.path(), "stranger");
    let stranger = keystore(dir.path(), "stranger", &other_ca);
    let mut stranger_properties = node_properties(&stranger, &truststore);
    stranger_properties.insert("ssl.truststore.location".into(), other_truststore);
    let stranger = QuorumTransport::from_properties(&stranger_properties).unwrap();
    let refused = ask(stranger).await;
    assert!(refused.is_err(), "a certificate from another CA is refused: {refused:?}");

    let intruder = keystore(dir.path(), "intruder", &ca);
    let intruder = QuorumTransport::from_properties(&node_properties(&intruder, &truststore));
    let refused = ask(intruder.unwrap()).await;
    assert!(refused.is_err(), "User:CN=intruder is not a super user: {refused:?}");

    let status = ask(Arc::clone(&transport)).await.expect("the voter still serves its members");
    assert_eq!(status.leader, Some(1));
    other.shutdown().await;
    voter.shutdown().await;
}

#[test]
fn a_controller_listener_that_leaves_the_quorum_unauthenticated_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (truststore, ca) = authority(dir.path(), "cluster");
    let node_keystore = keystore(dir.path(), "node", &ca);
    let refused = |change: &[(&str, &str)]| {
        let mut properties = node_properties(&node_keystore, &truststore);
        for (key, value) in change {
            properties.insert((*key).to_owned(), (*value).to_owned());
        }
        QuorumTransport::from_properties(&properties).expect_err("refused").to_string()
    };
    assert_eq!(
        refused(&[("listener.name.controller.ssl.client.auth", "requested")]),
        "controller listener CONTROLLER: SSL needs ssl.client.auth=required: the quorum's \
         messages carry no other authentication, so every node proves itself with its certificate"
    );
    assert_eq!(
        refused(&[("listener.security.protocol.map", "CONTROLLER:SASL_SSL")]),
        "controller listener CONTROLLER: SASL_SSL is not offered on the controller listener; use \
         SSL with ssl.client.auth=required (docs/cluster.md)"
    );
    assert_eq!(
        refused(&[("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT")]),
        "controller listener CONTROLLER: Controller listener with name CONTROLLER defined in \
         controller.listener.names not found in listener.security.protocol.map  (an explicit \
         security mapping for each controller listener is required if \
         listener.security.protocol.map is non-empty, or if there are security protocols other \
         than PLAINTEXT in use)"
    );
    // Kafka's default: an unmapped controller listener is PLAINTEXT while nothing uses SSL or
    // SASL, and needs a mapping once something does.
    let mut properties: BTreeMap<String, String> =
        [("controller.listener.names".to_owned(), "CONTROLLER".to_owned())].into();
    let plaintext = QuorumTransport::from_properties(&properties).expect("PLAINTEXT");
    assert!(!plaintext.is_tls());
    properties.insert("listeners".to_owned(), "SSL://127.0.0.1:9093".to_owned());
    let refused = QuorumTransport::from_properties(&properties).expect_err("needs a mapping");
    assert!(refused.reason.starts_with("Controller listener with name CONTROLLER"), "{refused}");
}
