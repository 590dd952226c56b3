//! End-to-end tests of `seglog inspect`: the built binary on a sample directory, on corrupt and
//! torn segments, on a non-Kafka file and on a missing path.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

fn seglog(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seglog")).current_dir(dir).args(args).output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

const SAMPLE_LOG: &str = "seglog-data/sample-0/00000000000000000000.log";

#[test]
fn default_dir_gets_a_sample_and_inspects_clean() {
    let temp = tempfile::tempdir().unwrap();
    let output = seglog(temp.path(), &["inspect"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("sample-0: 1 segments, 5 batches, 15 records, offsets 0..14"), "{text}");
    assert!(text.contains("codecs [gzip=1 lz4=1 none=1 snappy=1 zstd=1]"), "{text}");
    assert!(text.contains("1 partitions, all clean"), "{text}");
    assert!(stderr(&output).contains("created a sample partition"));
    // A second run inspects what is there and creates nothing.
    let again = seglog(temp.path(), &["inspect"]);
    assert_eq!(stdout(&again), text);
    assert!(!stderr(&again).contains("created"));
}

#[test]
fn a_flipped_byte_is_reported_with_its_position() {
    let temp = tempfile::tempdir().unwrap();
    assert!(seglog(temp.path(), &["inspect"]).status.success());
    let log = temp.path().join(SAMPLE_LOG);
    let mut bytes = std::fs::read(&log).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&log, &bytes).unwrap();
    let output = seglog(temp.path(), &["inspect"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("corrupt: at byte position"), "{text}");
    assert!(text.contains("record is corrupt (stored crc ="), "{text}");
    assert!(text.contains("PROBLEMS FOUND"), "{text}");
}

#[test]
fn a_torn_tail_is_reported() {
    let temp = tempfile::tempdir().unwrap();
    assert!(seglog(temp.path(), &["inspect"]).status.success());
    let log = temp.path().join(SAMPLE_LOG);
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 10]).unwrap();
    let output = seglog(temp.path(), &["inspect", "seglog-data/sample-0"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("4 batches, 12 records, offsets 0..11"), "{text}");
    assert!(text.contains("bytes of partial batch at position"), "{text}");
}

#[test]
fn bad_input_gets_one_line_errors() {
    let temp = tempfile::tempdir().unwrap();
    let junk = temp.path().join("junk.log");
    std::fs::write(&junk, b"this is not a kafka segment, just some text").unwrap();
    // Bytes 8..12 of this text read as a huge size: Kafka's reader sees a partial batch.
    let output = seglog(temp.path(), &["inspect", "junk.log"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("43 bytes of partial batch at position 0"),
        "{}",
        stdout(&output)
    );
    // A negative size is corruption.
    std::fs::write(
        &junk,
        [0u8, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8],
    )
    .unwrap();
    let output = seglog(temp.path(), &["inspect", "junk.log"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("corrupt: at byte position 0: entry size -16 is smaller"), "{text}");

    let output = seglog(temp.path(), &["inspect", "missing-dir"]);
    assert_eq!(output.status.code(), Some(1));
    let error = stderr(&output);
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(error.starts_with("seglog: cannot open missing-dir"), "{error}");
    assert!(!error.contains("panicked"));

    let output = seglog(temp.path(), &["inspect", "--no-such-flag"]);
    assert_eq!(output.status.code(), Some(2));
}
