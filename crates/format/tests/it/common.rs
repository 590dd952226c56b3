//! Helpers shared by the integration tests: hex parsing and the external fixtures directory.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// Bytes from hex text; anything that is not a hex digit (spaces, `|`, newlines, `0000:` address
/// columns are stripped by the caller) is ignored.
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// Bytes from an `xxd`-like dump whose lines start with a `0000:` address column.
pub fn hex_dump(text: &str) -> Vec<u8> {
    let body: String = text
        .lines()
        .map(|line| line.split_once(':').map_or(line, |(_, rest)| rest))
        .collect::<Vec<_>>()
        .join(" ");
    hex(&body)
}

/// The `kafka-real` fixtures directory, or `None` (with a loud note) when it is absent outside CI.
/// In CI (`CI` set) a missing directory fails the test.
pub fn kafka_real() -> Option<PathBuf> {
    seglog_format::testing::kafka_real_fixtures(Path::is_dir)
}

/// The repository's `testdata/` directory.
pub fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}
