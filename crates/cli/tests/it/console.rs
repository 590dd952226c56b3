//! The web console as users see it: `seglog serve` with known data (a topic with small
//! segments written by kcat, a group that consumed part of it), every page driven in Debian's
//! chromium by playwright-core (`tests/console/browser.mjs`), with the figures on the pages
//! compared with what the test wrote and what is on disk, and a screenshot of each page under
//! `target/console-screenshots/`, behind the login a SASL listener asks for. `.ci/run` installs
//! chromium and playwright-core; under CI a missing one fails the test, elsewhere it says loudly
//! that it skipped.

#![allow(clippy::format_collect, reason = "test data built line by line")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::serve::{Broker, client, which};

/// The user the secured broker's console is logged in as.
const USER: &str = "alice";
const PASSWORD: &str = "alice-secret";

/// One request to the console: the status, the head and the body.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    body: &str,
    cookie: &str,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).expect("the console accepts");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nCookie: {cookie}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("request written");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status");
    (status, head.to_owned(), body.to_owned())
}

/// Logs in as [`USER`]; the session cookie (`name=value`).
fn login(addr: &str) -> String {
    let body = format!(r#"{{"username":"{USER}","password":"{PASSWORD}"}}"#);
    let (status, head, answer) = request(addr, "POST", "/api/v1/login", &body, "");
    assert_eq!(status, 200, "{answer}");
    head.lines()
        .find_map(|line| line.strip_prefix("set-cookie: "))
        .and_then(|cookie| cookie.split(';').next())
        .expect("a session cookie")
        .to_owned()
}

/// Runs kcat with `args`, feeding `input`; fails the test on an error.
fn kcat(kcat: &Path, args: &[&str], input: &str) {
    let mut child = Command::new(kcat)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat runs");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("kcat reads");
    let output = child.wait_with_output().expect("kcat ends");
    assert!(output.status.success(), "kcat {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// The `.log` files of a partition directory: their count and their bytes.
fn logs_on_disk(dir: &Path) -> (usize, u64) {
    let mut count = 0;
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir).expect("partition directory") {
        let entry = entry.expect("entry");
        if entry.path().extension().is_some_and(|e| e == "log") {
            count += 1;
            bytes += entry.metadata().expect("metadata").len();
        }
    }
    (count, bytes)
}

/// The console's dump of the first segment of `orders`-0 is `seglog dump`'s text.
fn check_dump_view(console: &str, data: &Path) {
    let first_log = data.join("orders-0").join(format!("{:020}.log", 0));
    let dumped = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["dump", "--files"])
        .arg(&first_log)
        .output()
        .expect("seglog dump runs");
    let dumped = String::from_utf8(dumped.stdout).expect("UTF-8 dump");
    let path = "/api/v1/topics/orders/partitions/0/segments/0/dump?lines=3";
    let (status, _, _) = request(console, "GET", path, "", "");
    assert_eq!(status, 401, "the broker has a SASL listener: a login first");
    let (status, _, page) = request(console, "GET", path, "", &login(console));
    assert_eq!(status, 200, "{page}");
    let page: serde_json::Value = serde_json::from_str(&page).expect("JSON");
    let expected: Vec<&str> = dumped.lines().take(3).collect();
    assert_eq!(page["lines"], serde_json::json!(expected), "the dump view is seglog dump's text");
    assert_eq!(page["more"], true);
}

/// `seglog serve` over `data` with the console on, and a SASL listener (PLAIN, [`USER`]) beside
/// the clients' PLAINTEXT one: the console asks for a login.
fn start_secured(data: &Path) -> Broker {
    let jaas = format!(
        "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_{USER}=\"{PASSWORD}\";"
    );
    Broker::start_with(
        data,
        "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        &[
            "--console-listener",
            "127.0.0.1:0",
            "--override",
            "seglog.console.sample.interval.ms=200",
            "--override",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
            "--override",
            &jaas,
        ],
    )
}

#[test]
fn every_console_page_shows_the_brokers_figures_in_chromium() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console");
    let Some(node) = client("node", which("node")) else { return };
    let chromium =
        std::env::var_os("SEGLOG_CHROMIUM").map(PathBuf::from).or_else(|| which("chromium"));
    let Some(chromium) = client("chromium", chromium) else { return };
    let playwright = tests.join("node_modules/playwright-core");
    let Some(_) = client("playwright-core (npm ci in crates/cli/tests/console)", Some(playwright))
    else {
        return;
    };
    let Some(kcat_bin) = client("kcat", which("kcat")) else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let data_arg = data.display().to_string();
    let created = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args([
            "topics",
            "create",
            "--log-dir",
            &data_arg,
            "--topic",
            "orders",
            "--partitions",
            "2",
        ])
        .args(["--config", "segment.bytes=16384"])
        .output()
        .expect("seglog runs");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let broker = start_secured(&data);
    let console = broker.console.clone().expect("serve announces the console");
    let lines: String =
        (0..3000).map(|i| format!("order-{i} {{\"id\":{i},\"amount\":{}}}\n", i % 97)).collect();
    kcat(
        &kcat_bin,
        &["-b", &broker.addr, "-P", "-t", "orders", "-p", "0", "-K", " ", "-X", "batch.size=4000"],
        &lines,
    );
    // A group that read 1,000 of the 3,000 records (kcat commits on exit).
    let group_args =
        ["-b", &broker.addr, "-G", "billing", "-o", "beginning", "-e", "-c", "1000", "orders"];
    kcat(&kcat_bin, &group_args, "");

    let (segments_0, bytes_0) = logs_on_disk(&data.join("orders-0"));
    let (_, bytes_1) = logs_on_disk(&data.join("orders-1"));
    assert!(segments_0 >= 3, "16 KiB segments roll: {segments_0}");
    check_dump_view(&console, &data);

    let screenshots =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/console-screenshots");
    std::fs::create_dir_all(&screenshots).expect("screenshot directory");
    let expect = serde_json::json!({
        "topic": "orders",
        "topic_size_bytes": bytes_0 + bytes_1,
        "topic_records": 3000,
        "partition": 0,
        "segments": segments_0,
        "group": "billing",
        "group_lag": 2000,
        "topics": 2,
        "partitions": 52,
        "login": {"user": USER, "password": PASSWORD},
    });
    let output = Command::new(node)
        .arg("browser.mjs")
        .current_dir(&tests)
        .env("SEGLOG_CONSOLE_URL", format!("http://{console}"))
        .env("SEGLOG_CHROMIUM", &chromium)
        .env("SEGLOG_SCREENSHOTS", &screenshots)
        .env("SEGLOG_CONSOLE_EXPECT", expect.to_string())
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the browser checks failed:\n{stdout}\n{stderr}");
    assert!(!stdout.contains("not ok"), "{stdout}");
    for page in [
        "login",
        "overview",
        "topics",
        "topic",
        "partition",
        "messages",
        "groups",
        "group",
        "health",
    ] {
        let shot = screenshots.join(format!("{page}.png"));
        let size = std::fs::metadata(&shot).map_or(0, |m| m.len());
        assert!(size > 10_000, "{} is missing or blank ({size} bytes)", shot.display());
    }
    drop(broker);
}
