//! The web console's JSON API against a running broker: every endpoint's answer is validated
//! against the OpenAPI document the broker serves (`console/openapi.json`), its figures are
//! compared with the logs and groups they describe, bad parameters get a 400 that names them,
//! and actions are refused while `seglog.console.actions.enable` is off.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use seglog_broker::Server;
use seglog_format::Compression;
use seglog_storage::log::partition_log::TopicPartition;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{Client, batch, start};
use crate::protocol::{self, s};

/// One HTTP/1.1 exchange (`Connection: close`): the status and the body parsed as JSON.
async fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let (status, _, value) = http_as(addr, None, method, path, body).await;
    (status, value)
}

/// [`http`] with a session cookie; also returns the response's head.
async fn http_as(
    addr: SocketAddr,
    cookie: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String, Value) {
    let (status, head, text) = exchange(addr, cookie, method, path, body).await;
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{method} {path}: not JSON ({error}): {text}"));
    (status, head, value)
}

/// One HTTP/1.1 exchange: the status and the body as text.
async fn http_text(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String) {
    let (status, _, text) = exchange(addr, None, method, path, body).await;
    (status, text)
}

/// The status, the head and the body of one exchange.
async fn exchange(
    addr: SocketAddr,
    cookie: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).await.expect("the console accepts");
    let body = body.unwrap_or("");
    let cookie = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{cookie}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("request written");
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .expect("the console answers within 30 s")
        .expect("response read");
    let text = String::from_utf8(response).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    (status, head.to_owned(), body.to_owned())
}

/// The OpenAPI document, and which operations and statuses the tests have validated.
struct Spec {
    doc: Value,
    checked: Mutex<BTreeSet<(String, String, u16)>>,
}

impl Spec {
    async fn fetch(addr: SocketAddr) -> Self {
        let (status, doc) = http(addr, "GET", "/api/v1/openapi.json", None).await;
        assert_eq!(status, 200);
        assert_eq!(doc["openapi"], "3.1.0");
        Self { doc, checked: Mutex::new(BTreeSet::new()) }
    }

    /// Validates `body` as the answer `status` of `method` on the path `template`
    /// (`/topics/{topic}`), which the document must declare.
    fn check(&self, method: &str, template: &str, status: u16, body: &Value) {
        let operation = &self.doc["paths"][template][method.to_lowercase()];
        assert!(operation.is_object(), "{method} {template} is not in the OpenAPI document");
        let response = &operation["responses"][status.to_string()];
        assert!(response.is_object(), "{method} {template} does not declare status {status}");
        let schema = &response["content"]["application/json"]["schema"];
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.doc["components"],
            "$ref": schema["$ref"],
        });
        let validator = jsonschema::validator_for(&root).expect("the document's schema compiles");
        let errors: Vec<String> = validator
            .iter_errors(body)
            .map(|error| format!("{error} at {}", error.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{method} {template} ({status}): {errors:#?}\nin {body:#}");
        self.checked.lock().expect("lock").insert((method.to_owned(), template.to_owned(), status));
    }

    /// Sends a request and validates the answer, which must have `status`.
    async fn call(
        &self,
        addr: SocketAddr,
        method: &str,
        template: &str,
        path: &str,
        body: Option<&str>,
        status: u16,
    ) -> Value {
        let (got, value) = http(addr, method, path, body).await;
        assert_eq!(got, status, "{method} {path}: {value:#}");
        self.check(method, template, got, &value);
        value
    }

    /// [`Spec::call`] with a session cookie.
    async fn call_as(
        &self,
        addr: SocketAddr,
        cookie: &str,
        (method, template, path): (&str, &str, &str),
        status: u16,
    ) -> Value {
        let (got, _, value) = http_as(addr, Some(cookie), method, path, None).await;
        assert_eq!(got, status, "{method} {path} as {cookie}: {value:#}");
        self.check(method, template, got, &value);
        value
    }

    /// Every operation of the document that no check covered.
    fn unchecked(&self) -> Vec<String> {
        let checked = self.checked.lock().expect("lock");
        let mut missing = Vec::new();
        for (template, item) in self.doc["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("path item") {
                let method = method.to_uppercase();
                if !checked.iter().any(|(m, t, _)| *m == method && t == template)
                    && operation["responses"]["200"]["content"]["application/json"]["schema"]
                        .is_object()
                {
                    missing.push(format!("{method} {template}"));
                }
            }
        }
        missing
    }
}

async fn start_console(dir: &Path, actions: bool) -> (Server, SocketAddr) {
    let server = start(
        dir,
        &[
            ("seglog.console.listener", "127.0.0.1:0"),
            ("seglog.console.actions.enable", if actions { "true" } else { "false" }),
            ("seglog.console.sample.interval.ms", "50"),
        ],
    )
    .await;
    let addr = server.console_addr().expect("the console is on");
    (server, addr)
}

/// Produces `n` batches of 20 records (`v<i>`, timestamps from 1,000,000) to `topic`-0.
async fn produce(client: &mut Client, topic: &str, n_batches: usize) {
    for b in 0..n_batches {
        let values: Vec<String> = (0..20).map(|i| format!("v{}", b * 20 + i)).collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let first = 1_000_000 + i64::try_from(b * 20).expect("small");
        protocol::produce(client, topic, batch(Compression::None, &values, first)).await;
    }
}

/// Commits `offset` for `group` on `topic`-0 (an admin commit: no member).
async fn commit(client: &mut Client, group: &str, topic: &str, offset: i64) {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetCommitRequest};
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default().with_name(protocol::name(topic)).with_partitions(
                vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset),
                ],
            ),
        ]);
    let response = client.send(&request, 8).await;
    assert_eq!(response.topics[0].partitions[0].error_code, 0);
}

fn decode(value: &Value) -> String {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value.as_str().expect("base64 text"))
        .expect("base64");
    String::from_utf8(bytes).expect("UTF-8")
}

/// A topic `orders` (2 partitions, 1 KiB segments, every append fsynced) with 200 records in
/// partition 0, and a group `billing` that committed offset 50 there.
async fn fill(spec: &Spec, server: &Server, addr: SocketAddr) {
    let create = r#"{"name":"orders","partitions":2,"configs":{"segment.bytes":"1024","seglog.durability":"fsync-every-append"}}"#;
    spec.call(addr, "POST", "/topics", "/api/v1/topics", Some(create), 201).await;
    let mut client = Client::connect(server).await;
    produce(&mut client, "orders", 10).await;
    commit(&mut client, "billing", "orders", 50).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_answers_as_the_openapi_document_says_with_the_logs_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, addr) = start_console(dir.path(), true).await;
    let spec = Spec::fetch(addr).await;
    fill(&spec, &server, addr).await;
    let manager = server.broker().manager();
    let tp = TopicPartition { topic: "orders".to_owned(), partition: 0 };
    let log = manager.get_log(&tp).expect("orders-0");
    let size_0 = log.size_bytes().expect("size");
    let size_1 = manager
        .get_log(&TopicPartition { topic: "orders".to_owned(), partition: 1 })
        .expect("orders-1")
        .size_bytes()
        .expect("size");
    let bases = log.segment_base_offsets().expect("segments");
    assert!(bases.len() >= 3, "1 KiB segments roll: {bases:?}");
    check_topics(&spec, addr, size_0 + size_1, bases.len()).await;
    check_partition(&spec, addr, &bases, size_0).await;
    check_groups_and_history(&spec, &server, addr).await;
    actions_change_the_broker(&spec, &server, addr).await;
    let unchecked = spec.unchecked();
    assert!(unchecked.is_empty(), "operations no test validated: {unchecked:?}");
    server.shutdown().await.expect("shutdown");
}

/// The overview, the topic list (sorted, filtered) and the topic page of `orders`.
async fn check_topics(spec: &Spec, addr: SocketAddr, orders_bytes: u64, segments_0: usize) {
    let overview = spec.call(addr, "GET", "/overview", "/api/v1/overview", None, 200).await;
    assert_eq!(overview["topics"], 2, "orders and __consumer_offsets: {overview:#}");
    assert_eq!(overview["partitions"], 52);
    assert_eq!(overview["actions_enabled"], true);
    let listed =
        spec.call(addr, "GET", "/topics", "/api/v1/topics?internal=false", None, 200).await;
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["topics"][0]["name"], "orders");
    assert_eq!(listed["topics"][0]["size_bytes"], orders_bytes);
    assert_eq!(listed["topics"][0]["records"], 200);
    assert_eq!(listed["topics"][0]["durability"], "fsync-every-append");
    let sorted = spec
        .call(addr, "GET", "/topics", "/api/v1/topics?sort=size&order=desc&limit=1", None, 200)
        .await;
    assert_eq!(sorted["total"], 2);
    assert_eq!(sorted["topics"].as_array().map(Vec::len), Some(1));
    assert_eq!(sorted["topics"][0]["name"], "orders", "the largest first");
    let filtered =
        spec.call(addr, "GET", "/topics", "/api/v1/topics?filter=CONSUMER", None, 200).await;
    assert_eq!(filtered["topics"][0]["name"], "__consumer_offsets");

    let topic = spec.call(addr, "GET", "/topics/{topic}", "/api/v1/topics/orders", None, 200).await;
    assert_eq!(topic["partitions"], 2);
    assert_eq!(topic["partition_rows"][0]["high_watermark"], 200);
    assert_eq!(topic["partition_rows"][0]["segments"], segments_0);
    let second = "/api/v1/topics/orders?offset=1&limit=1";
    let page = spec.call(addr, "GET", "/topics/{topic}", second, None, 200).await;
    let rows = page["partition_rows"].as_array().expect("rows");
    assert_eq!((rows.len(), &rows[0]["partition"]), (1, &json!(1)), "one page of partitions");
    let segment_bytes = topic["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .find(|c| c["name"] == "segment.bytes")
        .cloned()
        .expect("segment.bytes");
    assert_eq!(segment_bytes["value"], "1024");
    assert_eq!(segment_bytes["source"], "DYNAMIC_TOPIC_CONFIG");
}

/// The timeline of `orders`-0 (segments `bases`, `size_0` bytes) and its message pages.
async fn check_partition(spec: &Spec, addr: SocketAddr, bases: &[i64], size_0: u64) {
    let template = "/topics/{topic}/partitions/{partition}/segments";
    let segments = spec
        .call(addr, "GET", template, "/api/v1/topics/orders/partitions/0/segments", None, 200)
        .await;
    let drawn: Vec<i64> = segments["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .map(|s| s["base_offset"].as_i64().expect("offset"))
        .collect();
    assert_eq!(drawn, bases, "every local segment, in order");
    let states: Vec<&str> = segments["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .filter_map(|s| s["state"].as_str())
        .collect();
    assert_eq!(states.last(), Some(&"active"));
    assert!(states[..states.len() - 1].iter().all(|s| *s == "closed"), "{states:?}");
    let summed: u64 = segments["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .filter_map(|s| s["size_bytes"].as_u64())
        .sum();
    assert_eq!(summed, size_0);
    assert_eq!(segments["high_watermark"], 200);

    let template = "/topics/{topic}/partitions/{partition}/messages";
    let page = spec
        .call(
            addr,
            "GET",
            template,
            "/api/v1/topics/orders/partitions/0/messages?from=offset&offset=10&limit=5",
            None,
            200,
        )
        .await;
    let offsets: Vec<i64> = page["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["offset"].as_i64())
        .collect();
    assert_eq!(offsets, [10, 11, 12, 13, 14]);
    assert_eq!(decode(&page["messages"][0]["value"]), "v10");
    assert_eq!(decode(&page["messages"][0]["key"]), "k10");
    assert_eq!(page["next_offset"], 15);
    let by_time = spec
        .call(
            addr,
            "GET",
            template,
            "/api/v1/topics/orders/partitions/0/messages?from=timestamp&timestamp=1000123&limit=1",
            None,
            200,
        )
        .await;
    assert_eq!(by_time["messages"][0]["offset"], 123);
    let end = spec
        .call(
            addr,
            "GET",
            template,
            "/api/v1/topics/orders/partitions/0/messages?limit=3",
            None,
            200,
        )
        .await;
    let offsets: Vec<i64> = end["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["offset"].as_i64())
        .collect();
    assert_eq!(offsets, [197, 198, 199], "from the end by default");

    let template = "/topics/{topic}/partitions/{partition}/segments/{base_offset}/dump";
    spec.call(
        addr,
        "GET",
        template,
        "/api/v1/topics/orders/partitions/0/segments/0/dump",
        None,
        501,
    )
    .await;
}

/// The group `billing`, then throughput and health once the history has sampled.
async fn check_groups_and_history(spec: &Spec, server: &Server, addr: SocketAddr) {
    let groups = spec.call(addr, "GET", "/groups", "/api/v1/groups", None, 200).await;
    assert_eq!(groups["total"], 1);
    assert_eq!(groups["groups"][0]["group_id"], "billing");
    assert_eq!(groups["groups"][0]["lag"], 150);
    assert_eq!(groups["groups"][0]["state"], "Empty");
    let group =
        spec.call(addr, "GET", "/groups/{group}", "/api/v1/groups/billing", None, 200).await;
    assert_eq!(group["lag"], 150);
    assert_eq!(group["partitions"][0]["committed_offset"], 50);
    assert_eq!(group["partitions"][0]["high_watermark"], 200);

    // The history samples every 50 ms here: the produce above shows as records in.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut client = Client::connect(server).await;
    loop {
        produce(&mut client, "orders", 1).await;
        let throughput =
            spec.call(addr, "GET", "/throughput", "/api/v1/throughput", None, 200).await;
        let busy = throughput["points"]
            .as_array()
            .expect("points")
            .iter()
            .any(|p| p["records_in_per_sec"].as_f64().is_some_and(|r| r > 0.0));
        if busy {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no throughput sampled: {throughput:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Lag is sampled every sixth sample (300 ms here), from the coordinator: billing's history
    // shows its lag.
    loop {
        let group =
            spec.call(addr, "GET", "/groups/{group}", "/api/v1/groups/billing", None, 200).await;
        let history = group["lag_history"].as_array().cloned().unwrap_or_default();
        // At least 150 (200 records, 50 committed); more once the loop above produced.
        if history.iter().any(|point| point["lag"].as_i64().is_some_and(|lag| lag >= 150)) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no lag sampled: {group:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let health = spec.call(addr, "GET", "/health", "/api/v1/health", None, 200).await;
    assert!(health["fsync_latency"]["count"].as_u64().is_some_and(|n| n >= 10), "{health:#}");
    assert!(health["fsync_latency"]["p99_us"].as_u64().is_some_and(|n| n > 0), "{health:#}");
    let produce_rate = health["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .find(|r| r["api"] == "Produce")
        .cloned()
        .expect("Produce is counted");
    assert!(produce_rate["requests_total"].as_u64().is_some_and(|n| n >= 10), "{produce_rate}");
    assert!(health["cleaner"]["partitions"].as_array().is_some_and(|p| p.len() == 50));
    let session = spec.call(addr, "GET", "/session", "/api/v1/session", None, 200).await;
    assert_eq!(session, json!({"login_required": false, "principal": "User:ANONYMOUS"}));
    let login = r#"{"username":"alice","password":"alice-secret"}"#;
    let refused = spec.call(addr, "POST", "/login", "/api/v1/login", Some(login), 400).await;
    assert!(refused["message"].as_str().is_some_and(|m| m.contains("no login")), "{refused}");
    let out = spec.call(addr, "POST", "/logout", "/api/v1/logout", None, 200).await;
    assert_eq!(out["login_required"], false);
}

/// Each action through the console, checked in the broker after it.
async fn actions_change_the_broker(spec: &Spec, server: &Server, addr: SocketAddr) {
    let manager = server.broker().manager();
    let tp = TopicPartition { topic: "orders".to_owned(), partition: 0 };
    spec.call(
        addr,
        "POST",
        "/topics/{topic}/configs",
        "/api/v1/topics/orders/configs",
        Some(r#"{"set":{"retention.ms":"3600000"},"delete":["seglog.durability"]}"#),
        200,
    )
    .await;
    let config = manager.topic_config("orders").expect("config");
    assert_eq!(config.retention_ms, 3_600_000);
    assert_eq!(config.durability, seglog_storage::config::DurabilityMode::PageCache);
    spec.call(
        addr,
        "POST",
        "/topics/{topic}/partitions/{partition}/delete-records",
        "/api/v1/topics/orders/partitions/0/delete-records",
        Some(r#"{"before_offset":120}"#),
        200,
    )
    .await;
    assert_eq!(manager.get_log(&tp).expect("log").log_start_offset().expect("start"), 120);
    let reset = spec
        .call(
            addr,
            "POST",
            "/groups/{group}/reset-offsets",
            "/api/v1/groups/billing/reset-offsets",
            Some(r#"{"to":"earliest"}"#),
            200,
        )
        .await;
    assert!(reset["message"].as_str().is_some_and(|m| m.contains("1 offsets")), "{reset}");
    let group =
        spec.call(addr, "GET", "/groups/{group}", "/api/v1/groups/billing", None, 200).await;
    assert_eq!(group["partitions"][0]["committed_offset"], 120, "earliest is the new log start");
    let again = r#"{"name":"orders","partitions":1}"#;
    spec.call(addr, "POST", "/topics", "/api/v1/topics", Some(again), 409).await;
    spec.call(addr, "DELETE", "/topics/{topic}", "/api/v1/topics/orders", None, 200).await;
    assert!(manager.get_log(&tp).is_err(), "orders is deleted");
    spec.call(addr, "DELETE", "/topics/{topic}", "/api/v1/topics/orders", None, 404).await;
}

/// A bad request: (method, path template, path, body, status, what the message names).
type Case = (&'static str, &'static str, &'static str, Option<&'static str>, u16, &'static str);

const MESSAGES: &str = "/topics/{topic}/partitions/{partition}/messages";
const SEGMENTS: &str = "/topics/{topic}/partitions/{partition}/segments";
const DUMP: &str = "/topics/{topic}/partitions/{partition}/segments/{base_offset}/dump";

/// Bad parameters and bodies, each answered with an error that names what is wrong.
const BAD_REQUESTS: &[Case] = &[
    ("GET", "/topics", "/api/v1/topics?limit=0", None, 400, "limit"),
    ("GET", "/topics", "/api/v1/topics?limit=501", None, 400, "limit"),
    ("GET", "/topics", "/api/v1/topics?sort=colour", None, 400, "sort"),
    ("GET", "/topics", "/api/v1/topics?order=up", None, 400, "order"),
    ("GET", "/topics", "/api/v1/topics?offset=-1", None, 400, "offset"),
    ("GET", "/topics", "/api/v1/topics?colour=red", None, 400, "colour"),
    ("GET", "/topics/{topic}", "/api/v1/topics/nope", None, 404, "nope"),
    ("GET", SEGMENTS, "/api/v1/topics/orders/partitions/x/segments", None, 400, "x"),
    ("GET", SEGMENTS, "/api/v1/topics/orders/partitions/-1/segments", None, 400, "partition"),
    ("GET", SEGMENTS, "/api/v1/topics/orders/partitions/7/segments", None, 404, "orders-7"),
    (
        "GET",
        MESSAGES,
        "/api/v1/topics/orders/partitions/0/messages?from=offset",
        None,
        400,
        "offset",
    ),
    ("GET", MESSAGES, "/api/v1/topics/orders/partitions/0/messages?limit=101", None, 400, "limit"),
    (
        "GET",
        MESSAGES,
        "/api/v1/topics/orders/partitions/0/messages?from=tomorrow",
        None,
        400,
        "from",
    ),
    (
        "GET",
        MESSAGES,
        "/api/v1/topics/orders/partitions/0/messages?from=timestamp&timestamp=-5",
        None,
        400,
        "timestamp",
    ),
    ("GET", DUMP, "/api/v1/topics/orders/partitions/0/segments/0/dump?file=exe", None, 400, "file"),
    ("GET", DUMP, "/api/v1/topics/orders/partitions/0/segments/0/dump?lines=0", None, 400, "lines"),
    ("GET", "/groups", "/api/v1/groups?limit=9999", None, 400, "limit"),
    ("GET", "/groups/{group}", "/api/v1/groups/nobody", None, 404, "nobody"),
    ("POST", "/topics", "/api/v1/topics", Some("{not json"), 400, "JSON"),
    ("POST", "/topics", "/api/v1/topics", Some(r#"{"name":"a","colour":"red"}"#), 400, "colour"),
    ("POST", "/topics", "/api/v1/topics", Some(r#"{"name":"bad/name"}"#), 400, "bad/name"),
    (
        "POST",
        "/topics/{topic}/configs",
        "/api/v1/topics/orders/configs",
        Some("{}"),
        400,
        "nothing to change",
    ),
    (
        "POST",
        "/topics/{topic}/configs",
        "/api/v1/topics/orders/configs",
        Some(r#"{"set":{"retention.ms":"soon"}}"#),
        400,
        "retention.ms",
    ),
    (
        "POST",
        "/groups/{group}/reset-offsets",
        "/api/v1/groups/billing/reset-offsets",
        Some(r#"{"to":"yesterday"}"#),
        400,
        "to must be",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_parameters_get_a_400_that_names_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, addr) = start_console(dir.path(), true).await;
    let spec = Spec::fetch(addr).await;
    fill(&spec, &server, addr).await;
    for (method, template, path, body, status, named) in BAD_REQUESTS {
        let value = spec.call(addr, method, template, path, *body, *status).await;
        let message = value["message"].as_str().unwrap_or_default();
        assert!(message.contains(named), "{method} {path}: {message:?} does not name {named:?}");
    }
    let (status, value) = http(addr, "GET", "/api/v1/no/such/path", None).await;
    assert_eq!((status, value["error"].as_str()), (404, Some("Not Found")));
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_are_refused_while_the_console_is_read_only_and_change_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, addr) = start_console(dir.path(), false).await;
    let spec = Spec::fetch(addr).await;
    let mut client = Client::connect(&server).await;
    let create = protocol::create_topic_request("orders", 1, &[]);
    assert_eq!(client.send(&create, 7).await.topics[0].error_code, 0);
    produce(&mut client, "orders", 2).await;
    commit(&mut client, "billing", "orders", 5).await;
    let actions: &[(&str, &str, &str, Option<&str>)] = &[
        ("POST", "/topics", "/api/v1/topics", Some(r#"{"name":"new","partitions":1}"#)),
        ("DELETE", "/topics/{topic}", "/api/v1/topics/orders", None),
        (
            "POST",
            "/topics/{topic}/configs",
            "/api/v1/topics/orders/configs",
            Some(r#"{"set":{"retention.ms":"1"}}"#),
        ),
        (
            "POST",
            "/topics/{topic}/partitions/{partition}/delete-records",
            "/api/v1/topics/orders/partitions/0/delete-records",
            Some(r#"{"before_offset":-1}"#),
        ),
        (
            "POST",
            "/groups/{group}/reset-offsets",
            "/api/v1/groups/billing/reset-offsets",
            Some(r#"{"to":"latest"}"#),
        ),
    ];
    for (method, template, path, body) in actions {
        let value = spec.call(addr, method, template, path, *body, 403).await;
        let message = value["message"].as_str().unwrap_or_default();
        assert!(message.contains("seglog.console.actions.enable"), "{message}");
    }
    let manager = server.broker().manager();
    let log = manager.get_log(&TopicPartition { topic: "orders".to_owned(), partition: 0 });
    let log = log.expect("orders still exists");
    assert_eq!(log.log_start_offset().expect("start"), 0);
    assert_ne!(manager.topic_config("orders").expect("config").retention_ms, 1);
    assert!(manager.get_log(&TopicPartition { topic: "new".to_owned(), partition: 0 }).is_err());
    let group =
        spec.call(addr, "GET", "/groups/{group}", "/api/v1/groups/billing", None, 200).await;
    assert_eq!(group["partitions"][0]["committed_offset"], 5);
    let overview = spec.call(addr, "GET", "/overview", "/api/v1/overview", None, 200).await;
    assert_eq!(overview["actions_enabled"], false);
    // The pages are served by the same process.
    let (status, page) = http_text(addr, "GET", "/", None).await;
    assert_eq!(status, 200);
    assert!(page.contains("/assets/app.js"), "{page}");
    for asset in ["/assets/app.js", "/assets/style.css", "/assets/favicon.svg"] {
        let (status, body) = http_text(addr, "GET", asset, None).await;
        assert_eq!(status, 200, "{asset}");
        assert!(!body.trim().is_empty(), "{asset} is empty");
    }
    server.shutdown().await.expect("shutdown");
}

/// A broker with a SASL listener and an authorizer: the console asks for a login checked
/// against the SASL users, and each call runs as that user through the ACLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_security_the_console_needs_a_login_and_follows_the_users_acls() {
    use kafka_protocol::messages::CreateAclsRequest;
    use kafka_protocol::messages::create_acls_request::AclCreation;
    let dir = tempfile::tempdir().expect("tempdir");
    let jaas = r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_admin="admin-secret";"#;
    let server = start(
        dir.path(),
        &[
            ("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
            ("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
            ("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
            ("allow.everyone.if.no.acl.found", "true"),
            ("seglog.console.listener", "127.0.0.1:0"),
        ],
    )
    .await;
    let addr = server.console_addr().expect("the console is on");
    let spec = Spec::fetch(addr).await;
    // Two topics; `secret` gets an ACL for admin only, which leaves alice none on it.
    let mut client = Client::connect(&server).await;
    for topic in ["orders", "secret"] {
        let create = protocol::create_topic_request(topic, 1, &[]);
        assert_eq!(client.send(&create, 7).await.topics[0].error_code, 0);
        produce(&mut client, topic, 1).await;
    }
    let acl = CreateAclsRequest::default().with_creations(vec![
        AclCreation::default()
            .with_resource_type(2)
            .with_resource_name(s("secret"))
            .with_resource_pattern_type(3)
            .with_principal(s("User:admin"))
            .with_host(s("*"))
            .with_operation(2)
            .with_permission_type(3),
    ]);
    assert_eq!(client.send(&acl, 3).await.results[0].error_code, 0);

    let session = spec.call(addr, "GET", "/session", "/api/v1/session", None, 200).await;
    assert_eq!(session, json!({"login_required": true, "principal": null}));
    let denied = spec.call(addr, "GET", "/topics", "/api/v1/topics", None, 401).await;
    assert!(denied["message"].as_str().is_some_and(|m| m.contains("log in")), "{denied}");
    let wrong = r#"{"username":"alice","password":"guess"}"#;
    spec.call(addr, "POST", "/login", "/api/v1/login", Some(wrong), 401).await;
    let right = r#"{"username":"alice","password":"alice-secret"}"#;
    let (status, head, value) = http_as(addr, None, "POST", "/api/v1/login", Some(right)).await;
    assert_eq!(status, 200, "{value}");
    spec.check("POST", "/login", status, &value);
    assert_eq!(value["principal"], "User:alice");
    let cookie = head
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: "))
        .and_then(|cookie| cookie.split(';').next())
        .expect("a session cookie")
        .to_owned();
    assert!(head.to_lowercase().contains("httponly"), "{head}");

    let topics = ("GET", "/topics", "/api/v1/topics?internal=false");
    let listed = spec.call_as(addr, &cookie, topics, 200).await;
    let names: Vec<&str> = listed["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["orders"], "alice may not describe secret");
    let messages = "/topics/{topic}/partitions/{partition}/messages";
    let read = spec
        .call_as(
            addr,
            &cookie,
            ("GET", messages, "/api/v1/topics/orders/partitions/0/messages"),
            200,
        )
        .await;
    assert_eq!(read["messages"].as_array().map(Vec::len), Some(20));
    for (template, path) in [
        ("/topics/{topic}", "/api/v1/topics/secret"),
        (messages, "/api/v1/topics/secret/partitions/0/messages"),
        (
            "/topics/{topic}/partitions/{partition}/segments",
            "/api/v1/topics/secret/partitions/0/segments",
        ),
    ] {
        let refused = spec.call_as(addr, &cookie, ("GET", template, path), 403).await;
        let message = refused["message"].as_str().unwrap_or_default();
        assert!(message.contains("User:alice") && message.contains("secret"), "{message}");
    }
    let (status, _, _) = http_as(addr, Some(&cookie), "POST", "/api/v1/logout", None).await;
    assert_eq!(status, 200);
    spec.call_as(addr, &cookie, topics, 401).await;
    server.shutdown().await.expect("shutdown");
}

/// The console holds at most 64 connections: a 65th waits in the backlog until one closes, so
/// that idle or hostile clients cost the broker a bounded number of descriptors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_holds_at_most_64_connections_and_serves_the_next_when_one_closes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, addr) = start_console(dir.path(), false).await;
    let mut idle = Vec::new();
    for _ in 0..64 {
        idle.push(TcpStream::connect(addr).await.expect("connects"));
    }
    let mut waiting = tokio::spawn(http(addr, "GET", "/api/v1/session", None));
    let early = tokio::time::timeout(Duration::from_millis(500), &mut waiting).await;
    assert!(early.is_err(), "a 65th connection was served while 64 were held: {early:?}");
    drop(idle.pop());
    let (status, session) = waiting.await.expect("the request task");
    assert_eq!((status, &session["login_required"]), (200, &json!(false)));
    drop(idle);
    server.shutdown().await.expect("shutdown");
}
