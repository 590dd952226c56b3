//! The input as one request frame (after the 4-byte size) handed to the broker's dispatch,
//! exactly as a connection would: header, body decode through `kafka-protocol`, and the
//! handler with real storage in a temporary directory. Nothing may panic or abort; a response,
//! when there is one, must be a whole frame whose size prefix matches.
//!
//! The first byte picks a mode: odd values are used as is (pure decoder fuzzing), even values
//! patch in a known API key and version so the input reaches the handlers more often.

#![no_main]

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use seglog_broker::{Broker, BrokerConfig, SUPPORTED_APIS, Server};

// As in the seglog binary (see ARCHITECTURE.md, "Hostile array counts").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let properties =
            [("listeners", "PLAINTEXT://127.0.0.1:0"), ("seglog.metrics.listener", "")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
        let mut config = BrokerConfig::from_properties(&properties).expect("config");
        config.fetch_wait_max_ms = 0;
        config.topic_partitions_max = 8;
        // Joins complete at once unless another member is awaited.
        config.groups.initial_rebalance_delay_ms = 0;
        config.groups.offsets_topic_partitions = 2;
        config.log.log_dirs = vec![dir.path().to_path_buf()];
        let server = runtime.block_on(Server::start(config)).expect("broker starts");
        let broker = Arc::clone(server.broker());
        // A topic for produce and fetch inputs to land on.
        broker.manager().create_topic("t", 2, Default::default()).expect("topic");
        Harness { runtime, broker, _server: server, _dir: dir }
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
    let harness = harness();
    // A JoinGroup or SyncGroup may rightly wait for other members (up to the rebalance
    // timeout the input asks for): such an input is cut short, not a hang.
    let response = harness.runtime.block_on(async {
        tokio::time::timeout(
            std::time::Duration::from_millis(200),
            seglog_broker::handle_frame(&harness.broker, Bytes::from(frame)),
        )
        .await
        .ok()
        .flatten()
    });
    if let Some(response) = response {
        let size = i32::from_be_bytes(response[..4].try_into().expect("size prefix"));
        assert_eq!(usize::try_from(size).expect("non-negative"), response.len() - 4);
    }
});
