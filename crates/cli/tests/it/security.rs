//! Security with real clients against `seglog serve`: kcat (librdkafka 2.0.2) over TLS and
//! mTLS, confluent-kafka over SASL_SSL with SCRAM-SHA-512, over mTLS with the principal mapped
//! from the certificate, and with OAUTHBEARER (an unsecured JWS), kafka-python with PLAIN and
//! SCRAM-SHA-256 over SASL_PLAINTEXT and over TLS. Each client produces and consumes when its
//! credentials are right, and is refused, with the error it shows, when they are wrong.
//! `tests/python/security.py` prints what the Python clients did; the judging is here.
//!
//! Every case gets its own log directory, its certificates from `seglog serve
//! --generate-dev-certs`, its users and ACLs from `seglog users add` and `seglog acls add`
//! before the broker starts, and listeners on port 0 (the addresses are read from the lines
//! `seglog serve` prints). Within a case the clients run at once.

#![allow(clippy::print_stderr, reason = "each case's timings go to stderr")]
#![allow(clippy::format_collect, reason = "test data built line by line")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::serve::{python, python_script};

const SEGLOG: &str = env!("CARGO_BIN_EXE_seglog");
/// How long anything here may take before the test fails.
const BOUND: Duration = Duration::from_secs(30);
/// What `security.py` and the kcat cases produce: this many records.
const RECORDS: usize = 20;
const MAPPING_RULES: &str = "RULE:^.*CN=([^,]+).*$/$1/,DEFAULT";
const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";
/// What the broker answers a failed SaslAuthenticate with (Kafka's words).
fn invalid_credentials(mechanism: &str) -> String {
    format!(
        "Authentication failed during authentication due to invalid credentials with SASL \
         mechanism {mechanism}"
    )
}

/// `seglog serve` with several listeners, its stderr kept whole.
struct SecureBroker {
    child: Child,
    /// Listener name (upper case, as `seglog serve` prints it) -> address.
    addrs: BTreeMap<String, String>,
    stderr: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl SecureBroker {
    /// Starts `seglog serve --listener <listeners>` over `dir` with `settings` as `--override`s
    /// and `RUST_LOG=<log>`; returns once it serves.
    fn start(dir: &Path, listeners: &str, settings: &[(&str, String)], log: &str) -> Self {
        let mut command = Command::new(SEGLOG);
        command.args([
            "serve",
            "--listener",
            listeners,
            "--metrics-listener",
            "",
            "--console-listener",
            "",
        ]);
        command.arg("--log-dir").arg(dir);
        for (key, value) in settings {
            command.arg("--override").arg(format!("{key}={value}"));
        }
        let mut child = command
            .env("RUST_LOG", log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("seglog serve starts");
        let pipe = child.stderr.take().expect("stderr");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (sender, receiver) = mpsc::channel();
        let kept = Arc::clone(&stderr);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                kept.lock().unwrap_or_else(PoisonError::into_inner).push(line.clone());
                let _ = sender.send(line);
            }
        });
        // The first listener is the one `serving Kafka clients on` names; the others come
        // before it as `listener NAME on ADDR`.
        let first = listeners
            .split(',')
            .next()
            .and_then(|l| l.split_once("://"))
            .map(|(name, _)| name.to_ascii_uppercase())
            .expect("NAME://host:port");
        let mut addrs = BTreeMap::new();
        let deadline = Instant::now() + BOUND;
        loop {
            let line = receiver
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|error| {
                    let lines = stderr.lock().unwrap_or_else(PoisonError::into_inner);
                    panic!("seglog serve did not announce its listeners ({error}): {lines:#?}")
                });
            if let Some((name, addr)) =
                line.strip_prefix("seglog: listener ").and_then(|rest| rest.split_once(" on "))
            {
                addrs.insert(name.to_owned(), addr.to_owned());
            } else if let Some(rest) = line.strip_prefix("seglog: serving Kafka clients on ") {
                addrs.insert(first, rest.split_whitespace().next().expect("address").to_owned());
                break;
            }
        }
        Self { child, addrs, stderr, reader: Some(reader) }
    }

    fn addr(&self, listener: &str) -> &str {
        self.addrs.get(listener).unwrap_or_else(|| panic!("no listener {listener}: {self:?}"))
    }

    /// Everything the broker wrote to stderr so far.
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(PoisonError::into_inner).join("\n")
    }

    /// SIGTERM; once it exits cleanly, its whole stderr.
    fn stop(mut self) -> String {
        let pid = self.child.id().to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(status.success());
        let status = self.child.wait().expect("serve exits");
        if let Some(reader) = self.reader.take() {
            reader.join().expect("stderr reader");
        }
        let stderr = self.stderr();
        assert!(status.success(), "seglog serve: {status}\n{stderr}");
        stderr
    }
}

impl std::fmt::Debug for SecureBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecureBroker").field("addrs", &self.addrs).finish_non_exhaustive()
    }
}

impl Drop for SecureBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The files of `seglog serve --generate-dev-certs`.
struct Certs {
    dir: PathBuf,
}

impl Certs {
    fn generate(dir: &Path) -> Self {
        let out = seglog(&["serve", "--generate-dev-certs", &dir.display().to_string()]);
        assert!(out.contains("client certificate:"), "{out}");
        Self { dir: dir.to_owned() }
    }

    fn file(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    fn ca(&self) -> String {
        self.file("ca.pem")
    }

    fn keystore(&self) -> String {
        self.file("server.pem")
    }

    fn client_cert(&self) -> String {
        self.file("client.crt")
    }

    fn client_key(&self) -> String {
        self.file("client.key")
    }

    /// The broker's keystore and truststore.
    fn server_settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("ssl.keystore.type", "PEM".to_owned()),
            ("ssl.keystore.location", self.keystore()),
            ("ssl.truststore.type", "PEM".to_owned()),
            ("ssl.truststore.location", self.ca()),
        ]
    }
}

/// Runs the `seglog` binary; its stdout.
fn seglog(args: &[&str]) -> String {
    let output = Command::new(SEGLOG).args(args).output().expect("seglog runs");
    assert!(
        output.status.success(),
        "seglog {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn add_user(dir: &Path, user: &str, password: &str, mechanism: &str) {
    let dir = dir.display().to_string();
    let out = seglog(&[
        "users",
        "add",
        "--log-dir",
        &dir,
        "--user",
        user,
        "--password",
        password,
        "--mechanism",
        mechanism,
    ]);
    assert!(out.contains(&format!("added {user} ({mechanism}")), "{out}");
}

/// What a producer and a consumer with a group need of `topic` and `group`.
fn add_client_acls(dir: &Path, principal: &str, topic: &str, group: Option<&str>) {
    let dir = dir.display().to_string();
    let mut args = vec!["acls", "add", "--log-dir", &dir, "--principal", principal];
    for operation in ["Read", "Write", "Describe", "Create"] {
        args.extend(["--operation", operation]);
    }
    args.extend(["--topic", topic]);
    assert!(seglog(&args).contains("added 4 ACL(s)"));
    if let Some(group) = group {
        let out = seglog(&[
            "acls",
            "add",
            "--log-dir",
            &dir,
            "--principal",
            principal,
            "--operation",
            "Read",
            "--operation",
            "Describe",
            "--group",
            group,
        ]);
        assert!(out.contains("added 2 ACL(s)"), "{out}");
    }
}

/// kcat, when installed (a failure under CI, as in `serve.rs`).
fn kcat() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|dir| dir.join("kcat")).find(|p| p.exists())
    });
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "kcat is missing; .ci/run installs it");
        eprintln!("SKIPPED: kcat is not installed here (.ci/run installs it; CI fails without it)");
    }
    found
}

/// kcat with Debian's librdkafka (2.0.2, with OpenSSL): `cargo test` puts the build
/// directories of the rdkafka crate's own librdkafka (built without OpenSSL) on
/// LD_LIBRARY_PATH, which kcat would load instead.
fn kcat_command(kcat: &Path) -> Command {
    let mut command = Command::new(kcat);
    command.env_remove("LD_LIBRARY_PATH");
    command
}

fn kcat_args(addr: &str, config: &[(&str, String)]) -> Vec<String> {
    let mut args = vec!["-b".to_owned(), addr.to_owned()];
    for (key, value) in config {
        args.extend(["-X".to_owned(), format!("{key}={value}")]);
    }
    args
}

/// kcat produces `RECORDS` lines to `topic` and reads them back with their offsets.
fn kcat_round_trip(kcat: &Path, addr: &str, topic: &str, config: &[(&str, String)]) {
    let lines: String = (0..RECORDS).map(|i| format!("{topic}-{i}\n")).collect();
    let mut produce = kcat_command(kcat)
        .args(kcat_args(addr, config))
        .args(["-P", "-t", topic, "-p", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat -P");
    produce.stdin.take().expect("stdin").write_all(lines.as_bytes()).expect("write");
    let output = produce.wait_with_output().expect("kcat -P");
    assert!(output.status.success(), "kcat -P: {}", String::from_utf8_lossy(&output.stderr));
    let output = kcat_command(kcat)
        .args(kcat_args(addr, config))
        .args(["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %s\n"])
        .output()
        .expect("kcat -C");
    assert!(output.status.success(), "kcat -C: {}", String::from_utf8_lossy(&output.stderr));
    let want: String = (0..RECORDS).map(|i| format!("{i} {topic}-{i}\n")).collect();
    assert_eq!(String::from_utf8_lossy(&output.stdout), want, "{topic}");
}

/// `kcat -L` is refused: waits (bounded) for the stderr line with `wanted`, then stops kcat.
fn kcat_refused(kcat: &Path, addr: &str, config: &[(&str, String)], wanted: &str) -> String {
    let mut child = kcat_command(kcat)
        .args(kcat_args(addr, config))
        .args(["-L", "-m", "30"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat -L");
    let pipe = child.stderr.take().expect("stderr");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let deadline = Instant::now() + BOUND;
    let mut seen = Vec::new();
    let found = loop {
        match receiver.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line.contains(wanted) => break Some(line),
            Ok(line) => seen.push(line),
            Err(_) => break None,
        }
    };
    let _ = child.kill();
    let output = child.wait_with_output().expect("kcat exits");
    let listing = String::from_utf8_lossy(&output.stdout);
    assert!(!listing.contains("brokers:"), "kcat got metadata: {listing}");
    let line = found.unwrap_or_else(|| panic!("kcat never said {wanted:?}: {seen:#?}"));
    eprintln!("security: kcat was refused: {line}");
    line
}

/// `security.py <library> <addr> <topic> <group> <config>`: its stdout.
fn py(python: &Path, library: &str, addr: &str, topic: &str, config: &Value) -> String {
    let group = format!("{topic}-group");
    let output = Command::new(python)
        .env_remove("LD_LIBRARY_PATH")
        .arg(python_script("security.py"))
        .args([library, addr, topic, &group, &config.to_string()])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{library} {topic}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The Python client produced, read back and committed everything.
fn assert_round_trip(case: &str, stdout: &str) {
    let want = format!("PRODUCED {RECORDS}\nCONSUMED {RECORDS} in order\nCOMMITTED {RECORDS}\n");
    assert_eq!(stdout, want, "{case}");
}

/// The Python client's one line: `REFUSED <error> <text>`.
fn refusal<'a>(case: &str, stdout: &'a str) -> &'a str {
    let lines: Vec<&str> = stdout.lines().collect();
    match lines.as_slice() {
        [line] if line.starts_with("REFUSED ") => {
            eprintln!("security: {case}: the client saw: {line}");
            line
        }
        _ => panic!("{case}: expected a refusal and nothing else: {stdout}"),
    }
}

/// Runs `cases` at once; prints and returns how long each took.
fn concurrently(test: &str, cases: Vec<Case<'_>>) {
    let started = Instant::now();
    std::thread::scope(|scope| {
        let handles: Vec<_> = cases
            .into_iter()
            .map(|(name, case)| {
                let handle = scope.spawn(move || {
                    let started = Instant::now();
                    case();
                    started.elapsed()
                });
                (name, handle)
            })
            .collect();
        let mut panics = Vec::new();
        for (name, handle) in handles {
            match handle.join() {
                Ok(took) => eprintln!("security: {test}: {name}: {} ms", took.as_millis()),
                Err(_) => panics.push(name),
            }
        }
        assert!(panics.is_empty(), "{test}: failed: {panics:?}");
    });
    eprintln!("security: {test}: all cases: {} ms", started.elapsed().as_millis());
}

type Case<'a> = (String, Box<dyn FnOnce() + Send + 'a>);

fn case<'a>(name: impl Into<String>, f: impl FnOnce() + Send + 'a) -> Case<'a> {
    (name.into(), Box::new(f))
}

/// kcat over TLS (the dev CA as `ssl.ca.location`) and mTLS (the dev client certificate on a
/// listener with `ssl.client.auth=required`). Refused: a client that trusts another CA, a
/// client without a certificate on the mTLS listener, and one whose certificate another CA
/// signed.
#[test]
fn kcat_over_tls_and_mtls() {
    let Some(kcat) = kcat() else { return };
    let temp = tempfile::tempdir().expect("tempdir");
    let certs = Certs::generate(&temp.path().join("certs"));
    let other = Certs::generate(&temp.path().join("other"));
    let mut settings = certs.server_settings();
    settings.extend([
        ("listener.security.protocol.map", "SSL:SSL,MTLS:SSL".to_owned()),
        ("listener.name.mtls.ssl.client.auth", "required".to_owned()),
        ("connection.failed.authentication.delay.ms", "0".to_owned()),
    ]);
    let data = temp.path().join("data");
    let broker =
        SecureBroker::start(&data, "SSL://127.0.0.1:0,MTLS://127.0.0.1:0", &settings, "info");
    let (tls, mtls) = (broker.addr("SSL"), broker.addr("MTLS"));
    let ssl = |ca: String| vec![("security.protocol", "SSL".to_owned()), ("ssl.ca.location", ca)];
    let with_cert = |certs: &Certs| {
        let mut config = ssl(certs.ca());
        config.push(("ssl.certificate.location", certs.client_cert()));
        config.push(("ssl.key.location", certs.client_key()));
        config
    };
    let mut other_cert = with_cert(&other);
    other_cert[1].1 = certs.ca();
    let kcat = kcat.as_path();
    concurrently(
        "kcat_over_tls_and_mtls",
        vec![
            case("TLS produce and consume", || {
                kcat_round_trip(kcat, tls, "kcat-tls", &ssl(certs.ca()));
            }),
            case("TLS, the server's CA not trusted", || {
                let line = kcat_refused(kcat, tls, &ssl(other.ca()), "SSL handshake failed");
                assert!(line.contains("certificate verify failed"), "{line}");
            }),
            case("mTLS produce and consume", || {
                kcat_round_trip(kcat, mtls, "kcat-mtls", &with_cert(&certs));
            }),
            case("mTLS without a client certificate", || {
                let line = kcat_refused(kcat, mtls, &ssl(certs.ca()), "alert");
                // TLS 1.3's alert for a missing certificate (RFC 8446, 116).
                assert!(line.contains("tlsv13 alert certificate required"), "{line}");
            }),
            case("mTLS with a certificate of another CA", || {
                // The other CA has the same name, so the signature is what fails: rustls
                // answers with decrypt_error (51).
                let line = kcat_refused(kcat, mtls, &other_cert, "alert");
                assert!(line.contains("alert decrypt error"), "{line}");
            }),
        ],
    );
    let stderr = broker.stop();
    assert!(stderr.contains("seglog: stopped cleanly"), "{stderr}");
}

/// confluent-kafka over SASL_SSL with SCRAM-SHA-512: alice produces and consumes, a wrong
/// password is refused with Kafka's message, a client that does not trust the server's CA
/// never gets to SASL. With `RUST_LOG=debug`, neither the password nor its salted form (what a
/// SCRAM exchange proves knowledge of) is in the broker's stderr or in `seglog-security`.
#[test]
fn confluent_kafka_scram_sha_512_over_sasl_ssl_keeps_secrets_out_of_logs() {
    let Some(python) = python() else { return };
    let temp = tempfile::tempdir().expect("tempdir");
    let certs = Certs::generate(&temp.path().join("certs"));
    let other = Certs::generate(&temp.path().join("other"));
    let data = temp.path().join("data");
    let password = "alice-Secret-3b1f9c";
    add_user(&data, "alice", password, "SCRAM-SHA-512");
    add_user(&data, "alice", password, "SCRAM-SHA-256");
    let mut settings = certs.server_settings();
    settings.extend([
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512".to_owned()),
        ("connection.failed.authentication.delay.ms", "0".to_owned()),
    ]);
    let broker = SecureBroker::start(&data, "SASL_SSL://127.0.0.1:0", &settings, "debug");
    let addr = broker.addr("SASL_SSL");
    let config = |ca: String, password: &str| {
        json!({
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": ca,
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": password,
        })
    };
    let python = python.as_path();
    concurrently(
        "confluent_kafka_scram_sha_512_over_sasl_ssl",
        vec![
            case("SCRAM-SHA-512 produce and consume", || {
                let stdout =
                    py(python, "confluent", addr, "scram512", &config(certs.ca(), password));
                assert_round_trip("SCRAM-SHA-512", &stdout);
            }),
            case("SCRAM-SHA-512, a wrong password", || {
                let stdout =
                    py(python, "confluent", addr, "scram512-wrong", &config(certs.ca(), "alice"));
                let line = refusal("wrong password", &stdout);
                assert!(line.starts_with("REFUSED _AUTHENTICATION "), "{line}");
                assert!(line.contains(&invalid_credentials("SCRAM-SHA-512")), "{line}");
            }),
            case("SASL_SSL, the server's CA not trusted", || {
                let stdout =
                    py(python, "confluent", addr, "scram512-ca", &config(other.ca(), password));
                let line = refusal("other CA", &stdout);
                // librdkafka reports it as _SSL or, read in the receive path, _TRANSPORT.
                let ssl =
                    line.starts_with("REFUSED _SSL ") || line.starts_with("REFUSED _TRANSPORT ");
                assert!(ssl, "{line}");
                assert!(line.contains("certificate verify failed"), "{line}");
            }),
        ],
    );
    let stderr = broker.stop();
    // The log is at debug level and saw both exchanges.
    assert!(stderr.contains(" DEBUG "), "{stderr}");
    assert!(
        stderr.contains("failed authentication with SASL mechanism SCRAM-SHA-512 from 127.0.0.1"),
        "{stderr}"
    );
    let file = std::fs::read_to_string(data.join("seglog-security")).expect("seglog-security");
    let stored: Value = serde_json::from_str(&file).expect("JSON");
    let scram = stored["scram"].as_array().expect("scram credentials");
    assert_eq!(scram.len(), 2, "{file}");
    let mut secrets = vec![password.to_owned()];
    for credential in scram {
        assert_eq!(credential["user"], "alice");
        let digest = match credential["mechanism"].as_str() {
            Some("SCRAM-SHA-256") => "sha256",
            Some("SCRAM-SHA-512") => "sha512",
            other => panic!("mechanism {other:?}"),
        };
        let output = Command::new(python)
            .arg(python_script("security.py"))
            .args(["salted", password, credential["salt"].as_str().expect("salt")])
            .arg(credential["iterations"].to_string())
            .arg(digest)
            .output()
            .expect("python runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let salted = String::from_utf8_lossy(&output.stdout).into_owned();
        let forms: Vec<&str> = salted.lines().collect();
        assert_eq!(forms.len(), 2, "base64 and hex: {salted}");
        secrets.extend(forms.into_iter().map(str::to_owned));
    }
    for secret in &secrets {
        assert!(!stderr.contains(secret.as_str()), "the broker's stderr shows {secret:?}");
        assert!(!file.contains(secret.as_str()), "seglog-security holds {secret:?}");
    }
}

/// confluent-kafka over SSL with a client certificate: the principal is the certificate's CN
/// (`ssl.principal.mapping.rules`), `User:seglog-client`, whose ACLs let it produce, consume
/// and commit with the authorizer on. Refused: no certificate, another CA's certificate.
#[test]
fn confluent_kafka_over_mtls_with_the_principal_from_the_certificate() {
    let Some(python) = python() else { return };
    let temp = tempfile::tempdir().expect("tempdir");
    let certs = Certs::generate(&temp.path().join("certs"));
    let other = Certs::generate(&temp.path().join("other"));
    let data = temp.path().join("data");
    add_client_acls(&data, "User:seglog-client", "mtls", Some("mtls-group"));
    let mut settings = certs.server_settings();
    settings.extend([
        ("ssl.client.auth", "required".to_owned()),
        ("ssl.principal.mapping.rules", MAPPING_RULES.to_owned()),
        ("authorizer.class.name", STANDARD_AUTHORIZER.to_owned()),
        ("connection.failed.authentication.delay.ms", "0".to_owned()),
    ]);
    let broker = SecureBroker::start(&data, "SSL://127.0.0.1:0", &settings, "info");
    let addr = broker.addr("SSL");
    let config = |client: Option<&Certs>| {
        let mut config = json!({"security.protocol": "SSL", "ssl.ca.location": certs.ca()});
        if let Some(client) = client {
            config["ssl.certificate.location"] = client.client_cert().into();
            config["ssl.key.location"] = client.client_key().into();
        }
        config
    };
    let python = python.as_path();
    concurrently(
        "confluent_kafka_over_mtls",
        vec![
            case("mTLS as User:seglog-client, with its ACLs", || {
                let stdout = py(python, "confluent", addr, "mtls", &config(Some(&certs)));
                assert_round_trip("mTLS", &stdout);
            }),
            case("mTLS without a client certificate", || {
                let stdout = py(python, "confluent", addr, "mtls-none", &config(None));
                let line = refusal("no certificate", &stdout);
                assert!(line.contains("tlsv13 alert certificate required"), "{line}");
            }),
            case("mTLS with a certificate of another CA", || {
                let stdout = py(python, "confluent", addr, "mtls-other", &config(Some(&other)));
                let line = refusal("another CA", &stdout);
                assert!(line.contains("alert decrypt error"), "{line}");
            }),
        ],
    );
    broker.stop();
}

/// kafka-python over SASL_PLAINTEXT with PLAIN (bob, from the listener's JAAS config) and
/// SCRAM-SHA-256 (carol, from `seglog users add`), and over SSL. Wrong passwords and an
/// untrusted CA are refused.
#[test]
fn kafka_python_with_plain_scram_sha_256_and_tls() {
    let Some(python) = python() else { return };
    let temp = tempfile::tempdir().expect("tempdir");
    let certs = Certs::generate(&temp.path().join("certs"));
    let other = Certs::generate(&temp.path().join("other"));
    let data = temp.path().join("data");
    add_user(&data, "carol", "carol-secret", "SCRAM-SHA-256");
    let mut settings = certs.server_settings();
    settings.extend([
        ("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256".to_owned()),
        (
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "org.apache.kafka.common.security.plain.PlainLoginModule required \
             user_bob=\"bob-secret\";"
                .to_owned(),
        ),
        ("connection.failed.authentication.delay.ms", "0".to_owned()),
    ]);
    let broker = SecureBroker::start(
        &data,
        "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        &settings,
        "info",
    );
    let (sasl, tls) = (broker.addr("SASL_PLAINTEXT"), broker.addr("SSL"));
    let sasl_config = |mechanism: &str, user: &str, password: &str| {
        json!({
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": user,
            "sasl_plain_password": password,
        })
    };
    // kafka-python 3.0.12 drops the bytes it read with the end of the stream: when the
    // broker's SaslAuthenticate error and its close arrive together, it reports the closed
    // socket, otherwise the error. Either is a refusal; the broker's log says which mechanism
    // failed.
    let wrong_password = |mechanism: &str, stdout: &str| {
        let line = refusal(mechanism, stdout);
        let said = line.starts_with("REFUSED SaslAuthenticationFailedError ")
            && line.contains(&invalid_credentials(mechanism));
        let closed =
            line == "REFUSED KafkaConnectionError KafkaConnectionError: socket disconnected";
        assert!(said || closed, "{mechanism}: {line}");
    };
    let python = python.as_path();
    concurrently(
        "kafka_python_with_plain_scram_sha_256_and_tls",
        vec![
            case("PLAIN produce and consume", || {
                let stdout = py(
                    python,
                    "kafka-python",
                    sasl,
                    "plain",
                    &sasl_config("PLAIN", "bob", "bob-secret"),
                );
                assert_round_trip("PLAIN", &stdout);
            }),
            case("PLAIN, a wrong password", || {
                let config = sasl_config("PLAIN", "bob", "carol-secret");
                wrong_password("PLAIN", &py(python, "kafka-python", sasl, "plain-wrong", &config));
            }),
            case("SCRAM-SHA-256 produce and consume", || {
                let config = sasl_config("SCRAM-SHA-256", "carol", "carol-secret");
                assert_round_trip(
                    "SCRAM-SHA-256",
                    &py(python, "kafka-python", sasl, "scram256", &config),
                );
            }),
            case("SCRAM-SHA-256, a wrong password", || {
                let config = sasl_config("SCRAM-SHA-256", "carol", "bob-secret");
                let stdout = py(python, "kafka-python", sasl, "scram256-wrong", &config);
                wrong_password("SCRAM-SHA-256", &stdout);
            }),
            case("TLS produce and consume", || {
                let config = json!({"security_protocol": "SSL", "ssl_cafile": certs.ca()});
                assert_round_trip("TLS", &py(python, "kafka-python", tls, "tls", &config));
            }),
            case("TLS, the server's CA not trusted", || {
                let config = json!({"security_protocol": "SSL", "ssl_cafile": other.ca()});
                let stdout = py(python, "kafka-python", tls, "tls-other", &config);
                let line = refusal("other CA", &stdout);
                assert!(line.contains("CERTIFICATE_VERIFY_FAILED"), "{line}");
            }),
        ],
    );
    let stderr = broker.stop();
    for mechanism in ["PLAIN", "SCRAM-SHA-256"] {
        let failed =
            format!("failed authentication with SASL mechanism {mechanism} from 127.0.0.1");
        assert!(stderr.contains(&failed), "{failed}: {stderr}");
    }
}

/// confluent-kafka with OAUTHBEARER: an unsecured JWS (`alg: none`) with `sub`, `iat` and
/// `exp` is accepted (no JWKS configured: Kafka's unsecured validator), an expired one refused.
/// (The rdkafka crate's case is in crates/broker/tests/it/rdkafka_security.rs.)
#[test]
fn confluent_kafka_with_an_unsecured_oauthbearer_token() {
    let Some(python) = python() else { return };
    let temp = tempfile::tempdir().expect("tempdir");
    let data = temp.path().join("data");
    let settings = [
        ("sasl.enabled.mechanisms", "OAUTHBEARER".to_owned()),
        ("connection.failed.authentication.delay.ms", "0".to_owned()),
    ];
    let broker = SecureBroker::start(&data, "SASL_PLAINTEXT://127.0.0.1:0", &settings, "info");
    let addr = broker.addr("SASL_PLAINTEXT");
    let config = |iat: i64, exp: i64| {
        json!({
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "OAUTHBEARER",
            "oauth_token": {"sub": "olivia", "iat": iat, "exp": exp},
        })
    };
    let python = python.as_path();
    concurrently(
        "confluent_kafka_with_an_unsecured_oauthbearer_token",
        vec![
            case("OAUTHBEARER produce and consume", || {
                assert_round_trip(
                    "OAUTHBEARER",
                    &py(python, "confluent", addr, "oauth", &config(-10, 600)),
                );
            }),
            case("OAUTHBEARER, an expired token", || {
                // Expired five minutes ago: beyond the default 30 s of clock skew.
                let stdout = py(python, "confluent", addr, "oauth-expired", &config(-600, -300));
                let line = refusal("expired", &stdout);
                assert!(line.starts_with("REFUSED _AUTHENTICATION "), "{line}");
                assert!(line.contains(&invalid_credentials("OAUTHBEARER")), "{line}");
            }),
        ],
    );
    let stderr = broker.stop();
    assert!(stderr.contains("failed authentication with SASL mechanism OAUTHBEARER"), "{stderr}");
}

/// SCRAM-SHA-512 over SASL_PLAINTEXT as `user` (password `<user>-secret`), in `library`'s words.
fn scram_config(library: &str, user: &str) -> Value {
    let password = format!("{user}-secret");
    if library == "confluent" {
        json!({
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": user,
            "sasl.password": password,
        })
    } else {
        json!({
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": user,
            "sasl_plain_password": password,
        })
    }
}

/// Authorization with the ACLs of `seglog acls add`, as the handlers check them: alice, with
/// her topic's and group's ACLs, produces, consumes and commits; eve, without ACLs, is refused
/// with TOPIC_AUTHORIZATION_FAILED; mallory, with her topic's ACLs but none for her group,
/// produces and is refused with GROUP_AUTHORIZATION_FAILED; the mTLS principal
/// `User:seglog-client` without ACLs gets TOPIC_AUTHORIZATION_FAILED (with them,
/// `confluent_kafka_over_mtls_...` works).
#[test]
fn principals_without_acls_are_refused_by_confluent_kafka_and_kafka_python() {
    let Some(python) = python() else { return };
    let temp = tempfile::tempdir().expect("tempdir");
    let certs = Certs::generate(&temp.path().join("certs"));
    let data = temp.path().join("data");
    for user in ["alice", "eve", "mallory"] {
        add_user(&data, user, &format!("{user}-secret"), "SCRAM-SHA-512");
    }
    for library in ["confluent", "kafka-python"] {
        let topic = format!("authz-alice-{library}");
        add_client_acls(&data, "User:alice", &topic, Some(&format!("{topic}-group")));
        add_client_acls(&data, "User:mallory", &format!("authz-mallory-{library}"), None);
    }
    let mut settings = certs.server_settings();
    settings.extend([
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512".to_owned()),
        ("listener.name.ssl.ssl.client.auth", "required".to_owned()),
        ("ssl.principal.mapping.rules", MAPPING_RULES.to_owned()),
        ("authorizer.class.name", STANDARD_AUTHORIZER.to_owned()),
        ("connection.failed.authentication.delay.ms", "0".to_owned()),
    ]);
    let listeners = "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0";
    let broker = SecureBroker::start(&data, listeners, &settings, "info");
    let (sasl, tls) = (broker.addr("SASL_PLAINTEXT"), broker.addr("SSL"));
    let python = python.as_path();
    let mut cases = Vec::new();
    for (library, topic_denied, group_denied) in [
        ("confluent", "ERROR produce TOPIC_AUTHORIZATION_FAILED ", "GROUP_AUTHORIZATION_FAILED "),
        (
            "kafka-python",
            "ERROR produce TopicAuthorizationFailedError ",
            "GroupAuthorizationFailedError ",
        ),
    ] {
        cases.push(case(format!("{library} alice"), move || {
            let stdout = py(
                python,
                library,
                sasl,
                &format!("authz-alice-{library}"),
                &scram_config(library, "alice"),
            );
            assert_round_trip(&format!("{library} alice"), &stdout);
        }));
        cases.push(case(format!("{library} eve"), move || {
            let stdout = py(
                python,
                library,
                sasl,
                &format!("authz-eve-{library}"),
                &scram_config(library, "eve"),
            );
            assert!(stdout.starts_with(topic_denied), "{library} eve: {stdout}");
            eprintln!("security: {library} eve saw: {}", stdout.trim_end());
        }));
        cases.push(case(format!("{library} mallory"), move || {
            let mut config = scram_config(library, "mallory");
            if library == "confluent" {
                // With the partition assigned, librdkafka may read everything before the
                // coordinator's refusal comes, and then its commit waits for a coordinator
                // it never gets (_WAIT_COORD); a subscriber reads nothing before it.
                config["subscribe"] = true.into();
            }
            let stdout = py(python, library, sasl, &format!("authz-mallory-{library}"), &config);
            assert!(
                stdout.starts_with(&format!("PRODUCED {RECORDS}\n")),
                "{library} mallory: {stdout}"
            );
            let denied =
                stdout.lines().filter(|line| line.starts_with("ERROR ")).collect::<Vec<_>>();
            assert_eq!(denied.len(), 1, "{library} mallory: {stdout}");
            assert!(denied[0].contains(group_denied), "{library} mallory: {stdout}");
            eprintln!("security: {library} mallory saw: {}", denied[0]);
        }));
    }
    cases.push(case("confluent mTLS User:seglog-client without ACLs", || {
        let config = json!({
            "security.protocol": "SSL",
            "ssl.ca.location": certs.ca(),
            "ssl.certificate.location": certs.client_cert(),
            "ssl.key.location": certs.client_key(),
        });
        let stdout = py(python, "confluent", tls, "authz-mtls", &config);
        assert!(stdout.starts_with("ERROR produce TOPIC_AUTHORIZATION_FAILED "), "mTLS: {stdout}");
        eprintln!("security: mTLS without ACLs saw: {}", stdout.trim_end());
    }));
    concurrently("principals_without_acls_are_refused", cases);
    let stderr = broker.stop();
    assert!(stderr.contains("seglog: stopped cleanly"), "{stderr}");
}
