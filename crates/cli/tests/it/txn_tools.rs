//! The tools on a directory the transaction coordinator wrote: the broker runs in-process,
//! librdkafka (the `rdkafka` crate) commits one transaction, aborts one and leaves one open,
//! the broker stops cleanly, and then `seglog consume --isolation`, `seglog topics describe`
//! (last stable offset, open transactions) and `seglog dump` (the `.txnindex`, and
//! `__transaction_state` with `--transaction-log-decoder`) read what it left.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

const TIMEOUT: Duration = Duration::from_secs(30);

fn seglog(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .output()
        .expect("seglog runs")
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs the broker over `dir`, and a producer that commits `c-0..c-4`, aborts `a-0..a-2` and
/// leaves `o-0, o-1` in an open transaction. Returns the producer id.
fn write_transactions(dir: &Path) -> i64 {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut properties: BTreeMap<String, String> = BTreeMap::new();
        for (key, value) in [
            ("listeners", "PLAINTEXT://127.0.0.1:0"),
            ("seglog.metrics.listener", ""),
            ("seglog.console.listener", ""),
            ("transaction.state.log.num.partitions", "1"),
            ("offsets.topic.num.partitions", "1"),
        ] {
            properties.insert(key.to_owned(), value.to_owned());
        }
        properties.insert("log.dirs".to_owned(), dir.display().to_string());
        let config = seglog_broker::BrokerConfig::from_properties(&properties).expect("config");
        let server = seglog_broker::Server::start(config).await.expect("broker starts");
        let addr = server.local_addr().to_string();
        tokio::task::spawn_blocking(move || {
            let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
                .set("bootstrap.servers", &addr)
                .set("broker.address.family", "v4")
                .set("transactional.id", "tools-txn")
                .create()
                .expect("producer");
            producer.init_transactions(TIMEOUT).expect("init");
            let send = |value: &str| {
                producer
                    .send(BaseRecord::<(), str>::to("t").partition(0).payload(value))
                    .map_err(|(error, _)| error)
                    .expect("queued");
                producer.flush(TIMEOUT).expect("flush");
            };
            for (prefix, count, end) in
                [("c", 5, Some(true)), ("a", 3, Some(false)), ("o", 2, None)]
            {
                producer.begin_transaction().expect("begin");
                for i in 0..count {
                    send(&format!("{prefix}-{i}"));
                }
                match end {
                    Some(true) => producer.commit_transaction(TIMEOUT).expect("commit"),
                    Some(false) => producer.abort_transaction(TIMEOUT).expect("abort"),
                    None => {}
                }
            }
            // The open transaction stays open: the producer goes without ending it.
            drop(producer);
        })
        .await
        .expect("producer thread");
        let log = server
            .broker()
            .manager()
            .get_log(&seglog_storage::log::partition_log::TopicPartition {
                topic: "t".to_owned(),
                partition: 0,
            })
            .expect("log");
        let producers = log.active_producers().expect("producers");
        assert_eq!(producers.len(), 1, "{producers:?}");
        server.shutdown().await.expect("clean shutdown");
        producers[0].producer_id
    })
}

#[test]
fn tools_read_what_the_transaction_coordinator_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    let producer_id = write_transactions(dir.path());
    let dir_arg = dir.path().display().to_string();
    // Offsets: c-0..c-4 at 0-4, COMMIT at 5, a-0..a-2 at 6-8, ABORT at 9, o-0, o-1 at 10-11.
    let consume = |isolation: &str| {
        let output =
            seglog(&["consume", "--log-dir", &dir_arg, "--topic", "t", "--isolation", isolation]);
        stdout(&output).lines().map(str::to_owned).collect::<Vec<_>>()
    };
    assert_eq!(consume("read-committed"), ["c-0", "c-1", "c-2", "c-3", "c-4"]);
    assert_eq!(
        consume("read-uncommitted"),
        ["c-0", "c-1", "c-2", "c-3", "c-4", "a-0", "a-1", "a-2", "o-0", "o-1"]
    );
    let describe = stdout(&seglog(&["topics", "describe", "--log-dir", &dir_arg, "--topic", "t"]));
    let header: Vec<&str> = describe.lines().next().expect("header").split('\t').collect();
    let row: Vec<&str> = describe.lines().nth(1).expect("row").split('\t').collect();
    let column = |name: &str| row[header.iter().position(|h| *h == name).expect(name)];
    assert_eq!(column("LOG_END_OFFSET"), "12");
    assert_eq!(column("LAST_STABLE_OFFSET"), "10", "the open transaction's first offset");
    assert_eq!(column("OPEN_TRANSACTIONS"), format!("{producer_id}@10"));
    // The ABORT marker's segment has Kafka's `.txnindex` text.
    let txn_index = dir.path().join("t-0").join("00000000000000000000.txnindex");
    let dumped = stdout(&seglog(&["dump", "--files", &txn_index.display().to_string()]));
    assert!(
        dumped.contains(&format!(
            "version: 0 producerId: {producer_id} firstOffset: 6 lastOffset: 9 lastStableOffset: 10"
        )),
        "{dumped}"
    );
    // `__transaction_state`: every transition of the id, decoded as Kafka's tool prints them.
    let state_log = dir.path().join("__transaction_state-0").join("00000000000000000000.log");
    let decoded = stdout(&seglog(&[
        "dump",
        "--transaction-log-decoder",
        "--files",
        &state_log.display().to_string(),
    ]));
    let states: Vec<&str> = decoded
        .lines()
        .filter(|line| line.contains("transaction_metadata::transactionalId=tools-txn"))
        .filter_map(|line| line.split("state=").nth(1))
        .filter_map(|rest| rest.split(',').next())
        .collect();
    assert_eq!(
        states,
        [
            "Empty",
            "Ongoing",
            "PrepareCommit",
            "CompleteCommit",
            "Ongoing",
            "PrepareAbort",
            "CompleteAbort",
            "Ongoing"
        ],
        "{decoded}"
    );
}
