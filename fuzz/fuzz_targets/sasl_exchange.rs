//! The input, split into frames at `fuzzing::FRAME_SEPARATOR`, drives a SASL_PLAINTEXT
//! listener's authentication exactly as a connection would (`Authentication::new`, then
//! `on_frame` per frame, through `seglog_broker::fuzzing::sasl_exchange`). PLAIN (JAAS users),
//! SCRAM-SHA-256/512 (credentials stored through AlterUserScramCredentials) and OAUTHBEARER
//! (unsecured JWS) are all enabled. Nothing may panic; the hook asserts that nothing but
//! ApiVersions is served before authentication, that a failed step answers an error, closes and
//! leaves no session, and that a PLAIN or SCRAM session is a known user.
//!
//! In a SCRAM token, `%NONCE%` becomes the last server-first's combined nonce and `%FINAL%` the
//! valid client-final (the server's nonce is random), so inputs get past the nonce and proof.
//!
//! Seeds: `SEGLOG_FUZZ_WRITE_SEEDS=corpus/sasl_exchange cargo fuzz run sasl_exchange -- -runs=1`
//! writes the valid exchanges of `fuzzing::sasl_seeds` there.

#![no_main]

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use seglog_broker::fuzzing;
use seglog_broker::{Broker, BrokerConfig, Server};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The users that may authenticate with PLAIN (JAAS) and SCRAM (stored), all with
/// `fuzzing::SCRAM_PASSWORD`.
const USERS: [&str; 2] = ["alice", "bob"];

struct Harness {
    runtime: tokio::runtime::Runtime,
    broker: Arc<Broker>,
    _server: Server,
    _dir: tempfile::TempDir,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let jaas = format!(
            "org.apache.kafka.common.security.plain.PlainLoginModule required {};",
            USERS
                .iter()
                .map(|u| format!("user_{u}=\"{}\"", fuzzing::SCRAM_PASSWORD))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let mut properties: BTreeMap<String, String> = [
            ("log.dirs", dir.path().display().to_string()),
            ("seglog.metrics.listener", String::new()),
            ("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0".to_owned()),
            (
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
                "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER".to_owned(),
            ),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
            // A failure is answered at once: the delay is the server loop's, not the exchange's.
            ("connection.failed.authentication.delay.ms", "0".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        properties.insert("connections.max.reauth.ms".into(), "3600000".into());
        let config = BrokerConfig::from_properties(&properties).expect("config");
        let server = runtime.block_on(Server::start(config)).expect("broker starts");
        let broker = Arc::clone(server.broker());
        for user in USERS {
            for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
                runtime
                    .block_on(fuzzing::store_scram_user(
                        &broker,
                        mechanism,
                        user,
                        fuzzing::SCRAM_PASSWORD,
                    ))
                    .expect("credential stored");
            }
        }
        if let Ok(dir) = std::env::var("SEGLOG_FUZZ_WRITE_SEEDS") {
            std::fs::create_dir_all(&dir).expect("seed dir");
            for (i, seed) in
                fuzzing::sasl_seeds(USERS[0], fuzzing::SCRAM_PASSWORD).iter().enumerate()
            {
                std::fs::write(format!("{dir}/seed-{i:02}"), fuzzing::join_frames(seed))
                    .expect("seed written");
            }
        }
        Harness { runtime, broker, _server: server, _dir: dir }
    })
}

fuzz_target!(|data: &[u8]| {
    let harness = harness();
    let frames = fuzzing::split_frames(data);
    let _ = harness.runtime.block_on(fuzzing::sasl_exchange(&harness.broker, &frames, &USERS));
});
