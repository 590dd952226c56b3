//! Wraps the input in a valid v2 batch header (right length, magic and CRC) so that the fuzzer
//! spends its time in record parsing instead of fighting the CRC.
//!
//! Input layout (missing bytes read as zero):
//!
//! ```text
//! byte  size  field
//!    0     1  attributes: codec = byte % 5, plus bits 3-6 (timestamp type, transactional,
//!             control, delete horizon)
//!    1     1  recordsCount: 0-127 when bit 7 is clear, else the i32 at byte 2
//!    2     4  raw recordsCount
//!    6     4  baseSequence
//!   10     4  lastOffsetDelta
//!   14     8  baseOffset
//!   22     8  baseTimestamp
//!   30     8  maxTimestamp
//!   38     -  the records section
//! ```
//!
//! For a compressed codec the records section is used twice: once as the raw (garbage) compressed
//! payload, and once compressed with the codec so that record parsing is reached after
//! decompression.

#![no_main]

use std::hint::black_box;

use libfuzzer_sys::fuzz_target;
use seglog_format::compression::compress;
use seglog_format::{
    Batch, BatchHeader, Batches, Compression, ControlRecordType, DecodeLimits,
    EndTransactionMarker, RecordBatch,
};

const LIMITS: DecodeLimits = DecodeLimits { decompressed_bytes_max: 1 << 20 };
const PREFIX: usize = 38;

fn field<const N: usize>(data: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = data.get(at + i).copied().unwrap_or(0);
    }
    out
}

fn check(bytes: &[u8], records_count: i32, codec: Compression, payload_is_valid_stream: bool) {
    let batch = RecordBatch::new(bytes).expect("BatchHeader::encode wrote a well-framed batch");
    assert!(batch.is_valid(), "BatchHeader::encode wrote a bad CRC");
    assert_eq!(batch.records_count(), records_count);
    black_box((batch.last_sequence(), batch.last_offset(), batch.delete_horizon_ms()));
    let validated = batch.validate_records(LIMITS);
    if codec == Compression::None {
        assert_eq!(batch.validate().is_ok(), validated.is_ok(), "validate and validate_records");
    }
    match batch.records(LIMITS) {
        Ok(records) => {
            let mut ok_records = 0i64;
            let mut failed = false;
            for record in &records {
                match record {
                    Ok(record) => {
                        ok_records += 1;
                        black_box((record.offset, record.timestamp, record.sequence));
                        black_box((record.key, record.value, record.size_bytes));
                        let mut seen = 0;
                        for header in &record.headers {
                            black_box((header.key_str(), header.value));
                            seen += 1;
                        }
                        assert_eq!(seen, record.headers.len());
                        if batch.is_control_batch() {
                            if let Some(key) = record.key {
                                let _ = black_box(ControlRecordType::parse_key(key));
                            }
                            if let Some(value) = record.value {
                                let _ = black_box(EndTransactionMarker::parse(value));
                            }
                        }
                    }
                    Err(error) => {
                        black_box(error.to_string());
                        failed = true;
                    }
                }
            }
            assert_eq!(validated.is_ok(), !failed, "validate_records disagrees with iteration");
            if !failed {
                assert_eq!(ok_records, i64::from(records_count), "count of a valid batch");
            }
        }
        Err(error) => {
            black_box(error.to_string());
            assert!(validated.is_err());
            assert!(!payload_is_valid_stream, "our own {codec} stream failed: {error}");
        }
    }
    // The same bytes through the log walker and the any-magic view.
    for positioned in Batches::new(bytes).flatten() {
        let batch: Batch<'_> = positioned.batch;
        let _ = black_box((batch.last_sequence(), batch.base_offset(LIMITS)));
    }
}

fuzz_target!(|data: &[u8]| {
    let selector = field::<1>(data, 0)[0];
    let codec = Compression::ALL[usize::from(selector % 5)];
    let attributes = codec.id() | (selector & 0x78);
    let small_count = field::<1>(data, 1)[0];
    let records_count = if small_count & 0x80 == 0 {
        i32::from(small_count)
    } else {
        i32::from_be_bytes(field(data, 2))
    };
    let header = BatchHeader {
        base_offset: i64::from_be_bytes(field(data, 14)),
        partition_leader_epoch: 0,
        attributes,
        last_offset_delta: i32::from_be_bytes(field(data, 10)),
        base_timestamp: i64::from_be_bytes(field(data, 22)),
        max_timestamp: i64::from_be_bytes(field(data, 30)),
        producer_id: 1,
        producer_epoch: 0,
        base_sequence: i32::from_be_bytes(field(data, 6)),
        records_count,
    };
    let records = data.get(PREFIX..).unwrap_or_default();
    let bytes = header.encode(records).expect("small batch");
    check(&bytes, records_count, codec, codec == Compression::None);
    if codec != Compression::None {
        let compressed = compress(codec, records).expect("compression of a small input");
        let bytes = header.encode(&compressed).expect("small batch");
        check(&bytes, records_count, codec, true);
    }
});
