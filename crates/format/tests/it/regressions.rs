//! Inputs the cargo-fuzz targets in `fuzz/` found to panic, kept byte for byte so they never
//! panic again. Each test names the target that found it.

#![allow(clippy::unwrap_used)]

use seglog_format::{
    Batch, Batches, DecodeError, DecodeLimits, decrement_sequence, increment_sequence,
};

const LIMITS: DecodeLimits = DecodeLimits { decompressed_bytes_max: 1 << 20 };

/// Calls everything `batch_decode` calls on each entry of a log.
fn walk(log: &[u8]) {
    for positioned in Batches::new(log).flatten() {
        let batch = positioned.batch;
        let _ = (batch.last_offset(), batch.max_timestamp(), batch.last_sequence());
        let _ = (batch.validate(), batch.base_offset(LIMITS));
        if let Ok(records) = batch.records(LIMITS) {
            for record in records.iter().flatten() {
                let _ = record.headers.iter().count();
            }
        }
    }
}

/// batch_decode: a v2 batch with baseSequence 0 and lastOffsetDelta -134744073 overflowed
/// `i32::MAX - delta` in `increment_sequence` (via `last_sequence`).
#[test]
fn last_sequence_with_negative_last_offset_delta() {
    let log: [u8; 75] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 63, 0, 0, 0, 1, 2, 211, 247, 247, 247, 247, 247, 247, 247,
        247, 247, 247, 247, 247, 31, 16, 180, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255,
        255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 0, 115, 97,
        103,
    ];
    walk(&log);
    let Batch::V2(batch) = Batch::new(&log).unwrap() else { panic!("not a v2 batch") };
    assert_eq!((batch.base_sequence(), batch.last_offset_delta()), (0, -134_744_073));
    // What Kafka's `incrementSequence` computes with Java's wrapping `int` arithmetic.
    assert_eq!(batch.last_sequence(), 2_012_739_575);
}

/// Untrusted deltas of any sign and size wrap as Java's `int` does, in both directions.
#[test]
fn sequence_arithmetic_never_overflows() {
    assert_eq!(increment_sequence(0, -1), i32::MAX);
    assert_eq!(increment_sequence(-5, i32::MIN), i32::MAX - 4);
    assert_eq!(decrement_sequence(0, i32::MIN), i32::MIN);
    assert_eq!(decrement_sequence(i32::MIN, i32::MAX), i32::MIN + 1);
    for value in [i32::MIN, -1, 0, 1, i32::MAX] {
        for delta in [i32::MIN, -1, 0, 1, i32::MAX] {
            let _ = (increment_sequence(value, delta), decrement_sequence(value, delta));
        }
    }
}

/// Found by review, not by a fuzz target (the CRC-checked, gzip-compressed inner messages are out
/// of a mutator's reach): a v1 gzip wrapper at offset `i64::MAX` whose one inner message has
/// relative offset -1 overflowed `offset - last_relative` when making inner offsets absolute.
#[test]
fn legacy_wrapper_base_offset_overflow() {
    let log: [u8; 73] = [
        127, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 61, 59, 8, 154, 131, 1, 1, 0, 0, 0, 0, 0,
        0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 39, 31, 139, 8, 0, 0, 0, 0, 0, 2, 255, 251, 255, 31,
        2, 24, 24, 24, 196, 131, 111, 102, 105, 50, 50, 192, 0, 84, 148, 177, 2, 0, 169, 86, 150,
        30, 35, 0, 0, 0,
    ];
    walk(&log);
    let Batch::Legacy(entry) = Batch::new(&log).unwrap() else { panic!("not a legacy entry") };
    entry.validate().unwrap();
    assert_eq!(
        entry.records(LIMITS).unwrap_err(),
        DecodeError::InvalidWrapper {
            reason: "wrapper offset minus the last inner relative offset overflows"
        }
    );
}
