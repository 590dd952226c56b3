//! As `broker_request` (the first byte picks raw or a patched-in API key and version), but with
//! the StandardAuthorizer on, `super.users=User:admin`, no ACL, and every request sent as the
//! authenticated `User:mallory` (`seglog_broker::handle_frame_as`). Nothing may panic, and
//! mallory must change nothing that needs a permission: after each input the topic list, the
//! number of ACLs and of SCRAM credentials are what they were.
//!
//! `SEGLOG_FUZZ_REPORT_DIR=dir` turns a broken invariant into a report instead of a crash: the
//! input is written to `dir/<what>-<api key>` (once per kind and key), the harness puts the
//! topics back, and fuzzing goes on, so that one missing check does not hide the others.

#![no_main]

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use seglog_broker::fuzzing;
use seglog_broker::{Broker, BrokerConfig, SUPPORTED_APIS, Server};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Harness {
    runtime: tokio::runtime::Runtime,
    broker: Arc<Broker>,
    /// The topics as they should be; after a reported change that could not be undone (a
    /// deleted topic may not be re-creatable at once), the topics as they now are.
    topics: std::sync::Mutex<Vec<String>>,
    _server: Server,
    _dir: tempfile::TempDir,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let properties: BTreeMap<String, String> = [
            ("log.dirs", dir.path().display().to_string()),
            ("seglog.metrics.listener", String::new()),
            ("listeners", "PLAINTEXT://127.0.0.1:0".to_owned()),
            (
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer".to_owned(),
            ),
            ("super.users", "User:admin".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let mut config = BrokerConfig::from_properties(&properties).expect("config");
        config.fetch_wait_max_ms = 0;
        config.topic_partitions_max = 8;
        config.groups.initial_rebalance_delay_ms = 0;
        config.groups.offsets_topic_partitions = 2;
        let server = runtime.block_on(Server::start(config)).expect("broker starts");
        let broker = Arc::clone(server.broker());
        broker.manager().create_topic("t", 2, Default::default()).expect("topic");
        // The internal topics exist before mallory comes (the coordinators create them on
        // first use, whoever asks), so the topic list is fixed from here on.
        for internal in ["__consumer_offsets", "__transaction_state"] {
            if !broker.manager().topics().iter().any(|t| t == internal) {
                broker.manager().create_topic(internal, 2, Default::default()).expect("internal");
            }
        }
        let topics = std::sync::Mutex::new(broker.manager().topics());
        Harness { runtime, broker, topics, _server: server, _dir: dir }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut frame = rest.to_vec();
    if mode % 2 == 0 && frame.len() >= 4 {
        let (key, min, max) = SUPPORTED_APIS[usize::from(mode / 2) % SUPPORTED_APIS.len()];
        let version = min + i16::from(frame[3]) % (max - min + 1);
        frame[0..2].copy_from_slice(&(key as i16).to_be_bytes());
        frame[2..4].copy_from_slice(&version.to_be_bytes());
    }
    let api_key = frame.get(0..2).map_or(-1, |k| i16::from_be_bytes([k[0], k[1]]));
    let harness = harness();
    let response = harness.runtime.block_on(async {
        tokio::time::timeout(
            std::time::Duration::from_millis(200),
            seglog_broker::handle_frame_as(&harness.broker, Bytes::from(frame), "User:mallory"),
        )
        .await
        .ok()
        .flatten()
    });
    if let Some(response) = response {
        let size = i32::from_be_bytes(response[..4].try_into().expect("size prefix"));
        assert_eq!(usize::try_from(size).expect("non-negative"), response.len() - 4);
    }
    let topics = harness.broker.manager().topics();
    let (acls, scram) = fuzzing::security_counts(&harness.broker);
    let mut broken = Vec::new();
    let mut expected = harness.topics.lock().expect("lock");
    if topics != *expected {
        let created: Vec<_> = topics.iter().filter(|t| !expected.contains(t)).collect();
        let deleted: Vec<_> = expected.iter().filter(|t| !topics.contains(t)).collect();
        if !created.is_empty() {
            broken.push(format!("topic-created-{api_key}"));
        }
        if !deleted.is_empty() {
            broken.push(format!("topic-deleted-{api_key}"));
        }
        if std::env::var_os("SEGLOG_FUZZ_REPORT_DIR").is_none() {
            panic!(
                "User:mallory changed the topics with API key {api_key}: created {created:?}, deleted {deleted:?}"
            );
        }
        // Put the topics back for the next input.
        for topic in created {
            let _ = harness.broker.manager().delete_topic(topic);
        }
        for topic in deleted {
            let _ = harness.broker.manager().create_topic(topic, 2, Default::default());
        }
        *expected = harness.broker.manager().topics();
    }
    drop(expected);
    if acls != 0 {
        broken.push(format!("acl-created-{api_key}"));
        assert!(
            std::env::var_os("SEGLOG_FUZZ_REPORT_DIR").is_some(),
            "User:mallory created {acls} ACLs with API key {api_key}"
        );
    }
    if scram != 0 {
        broken.push(format!("scram-created-{api_key}"));
        assert!(
            std::env::var_os("SEGLOG_FUZZ_REPORT_DIR").is_some(),
            "User:mallory stored {scram} SCRAM credentials with API key {api_key}"
        );
    }
    if let Some(dir) = std::env::var_os("SEGLOG_FUZZ_REPORT_DIR") {
        for what in broken {
            let path = std::path::Path::new(&dir).join(what);
            if !path.exists() {
                let _ = std::fs::create_dir_all(&dir);
                let _ = std::fs::write(path, data);
            }
        }
    }
});
