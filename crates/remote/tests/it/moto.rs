//! The bucket side against S3's API, served by moto on 127.0.0.1 (a test bed: moto honours
//! If-None-Match and If-Match on PUT). Under CI a missing moto fails the test; elsewhere it says
//! loudly that it skipped.

#![allow(clippy::print_stderr, reason = "a skipped test says so on stderr")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use bytes::Bytes;
use object_store::{ObjectStore, ObjectStoreExt};
use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};
use seglog_remote::{
    Change, ManifestWriter, ObjectKind, PartitionLayout, RemoteError, RemoteReader, S3Config,
    open_s3, probe_conditional_put, read_manifest, upload_segment,
};

/// A moto server on a free port of 127.0.0.1, killed when dropped.
struct Moto {
    child: Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The venv's Python with moto, or `None` after saying why the test skips (a failure in CI).
fn python_with_moto() -> Option<PathBuf> {
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
    fn start(python: &PathBuf) -> Self {
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
    fn create_bucket(&self, bucket: &str) {
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

    fn store(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        open_s3(&S3Config {
            bucket: bucket.to_owned(),
            endpoint: Some(format!("http://127.0.0.1:{}", self.port)),
            region: Some("us-east-1".to_owned()),
            access_key_id: Some("testing".to_owned()),
            secret_access_key: Some("testing".to_owned()),
            allow_http: true,
        })
        .expect("the S3 client")
    }
}

/// Three batches of a few records each, as a `.log` holds them from offset `base`.
fn segment_log(base: i64) -> Bytes {
    let mut log = Vec::new();
    let mut offset = base;
    for batch_idx in 0..3_i64 {
        let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(offset);
        for _ in 0..=batch_idx {
            builder.push(1_000 + offset, Some(b"k"), Some(b"value"), &[]).expect("a record");
            offset += 1;
        }
        log.extend_from_slice(&builder.build().expect("a batch"));
    }
    Bytes::from(log)
}

#[test]
fn against_s3s_api_the_probe_passes_a_zombie_writer_is_fenced_and_segments_read_back() {
    let Some(python) = python_with_moto() else { return };
    let moto = Moto::start(&python);
    moto.create_bucket("seglog");
    let store = moto.store("seglog");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        probe_conditional_put(store.as_ref(), "tiered").await.unwrap();
        let layout = PartitionLayout::new("tiered", "orders", 0, "AAAAAAAAAAAAAAAAAAAAAQ");
        let mut zombie = ManifestWriter::acquire(Arc::clone(&store), layout.clone()).await.unwrap();
        let mut leader = ManifestWriter::acquire(Arc::clone(&store), layout.clone()).await.unwrap();
        // Segments of 6 offsets each (1 + 2 + 3 records), uploaded and committed by the leader.
        for base in [0_i64, 6, 12] {
            let log = segment_log(base);
            let objects = [(ObjectKind::Log, log.clone())];
            let entry =
                upload_segment(store.as_ref(), &layout, base, base + 5, 0, &objects).await.unwrap();
            let key = layout.object_key(base, entry.id, ObjectKind::Log);
            let stored = store.get(&key).await.unwrap().bytes().await.unwrap();
            assert_eq!(stored, log, "{key} is not byte-identical");
            leader.commit(&Change::Add(entry)).await.unwrap();
        }
        let late = upload_segment(
            store.as_ref(),
            &layout,
            18,
            23,
            0,
            &[(ObjectKind::Log, segment_log(18))],
        )
        .await
        .unwrap();
        let fenced = zombie.commit(&Change::Add(late)).await.unwrap_err();
        let RemoteError::Fenced { writer_epoch, stored_epoch, .. } = fenced else {
            panic!("the zombie was not fenced: {fenced}");
        };
        assert_eq!((writer_epoch, stored_epoch), (1, 2));
        let manifest = read_manifest(store.as_ref(), &layout).await.unwrap().unwrap();
        assert_eq!((manifest.log_start_offset, manifest.end_offset()), (0, 18));
        let reader = RemoteReader::new(layout.clone(), 1 << 20);
        for offset in 0..18 {
            let read = reader.read(store.as_ref(), &manifest, offset, 1).await.unwrap().unwrap();
            let batches: Vec<_> = Batches::new(&read.records).map(Result::unwrap).collect();
            assert_eq!(batches.len(), 1, "offset {offset}: one batch");
            let batch = &batches[0].batch;
            assert!(
                batch.base_offset(DecodeLimits::default()).unwrap() <= offset
                    && offset <= batch.last_offset()
            );
        }
    });
}
