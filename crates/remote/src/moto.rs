//! moto, the S3 test bed, in server mode on a free port of 127.0.0.1 (moto honours
//! If-None-Match and If-Match on PUT), from the Python venv `SEGLOG_PYTHON` names, which
//! `.ci/run` makes. Under CI a missing moto fails the test; elsewhere it says loudly that the
//! test skipped. For tests only (feature `testing`).

#![allow(clippy::print_stderr, reason = "a skipped test says so on stderr")]
#![allow(clippy::expect_used, clippy::panic, reason = "a test bed fails its test loudly")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use object_store::ObjectStore;

use crate::{S3Config, open_s3};

/// The credentials moto accepts (it does not check signatures).
pub const MOTO_CREDENTIALS: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "testing"),
    ("AWS_SECRET_ACCESS_KEY", "testing"),
    ("AWS_REGION", "us-east-1"),
];

/// A moto server on a free port of 127.0.0.1, killed when dropped.
#[derive(Debug)]
pub struct Moto {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The venv's Python with moto, or `None` after saying why the test skips (a failure in CI).
pub fn python_with_moto() -> Option<PathBuf> {
    let python = std::env::var_os("SEGLOG_PYTHON").map(PathBuf::from);
    let ready = python.as_ref().is_some_and(|python| {
        Command::new(python)
            .args(["-c", "import moto.server"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    });
    if ready {
        return python;
    }
    assert!(std::env::var_os("CI").is_none(), "moto is missing; .ci/run installs it");
    eprintln!("SKIPPED: moto is not installed in SEGLOG_PYTHON (.ci/run installs it)");
    None
}

impl Moto {
    /// Starts moto with `python` (the venv's) and waits until it listens.
    pub fn start(python: &PathBuf) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut child = Command::new(python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("moto starts");
        // Werkzeug says where it listens once it does.
        let stderr = child.stderr.take().expect("moto's stderr");
        let mut lines = BufReader::new(stderr).lines();
        let mut seen = Vec::new();
        loop {
            let Some(Ok(line)) = lines.next() else {
                panic!("moto exited before listening: {seen:#?}");
            };
            let listening = line.contains("Running on");
            seen.push(line);
            if listening {
                break;
            }
        }
        // Drain what it says later, so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self { child, port }
    }

    /// Creates `bucket` (moto does not check signatures).
    pub fn create_bucket(&self, bucket: &str) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("moto accepts");
        write!(
            stream,
            "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .expect("the request is sent");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("moto answers");
        assert!(answer.starts_with("HTTP/1.1 200"), "create bucket: {answer}");
    }

    /// The S3 endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// An S3 client of `bucket` on this server.
    pub fn store(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        open_s3(&S3Config {
            bucket: bucket.to_owned(),
            endpoint: Some(self.endpoint()),
            region: Some("us-east-1".to_owned()),
            access_key_id: Some("testing".to_owned()),
            secret_access_key: Some("testing".to_owned()),
            allow_http: true,
        })
        .expect("the S3 client")
    }
}
