//! The plain-records scan (`RecordBatch::scan_plain_records`) against the full decoder: on every
//! batch it vouches for, the decoder must accept the same records with the same figures, and it
//! must vouch for the ordinary producer batch (or the append path would never be fast).
//! proptest prints the failing input and its seed; `PROPTEST_CASES` raises the case count.

#![allow(clippy::unwrap_used, clippy::pedantic)]

use proptest::prelude::*;
use seglog_format::batch::{LENGTH_OFFSET, RECORD_BATCH_OVERHEAD, RECORDS_COUNT_OFFSET};
use seglog_format::varint::{write_unsigned_varint, write_varint, write_varlong};
use seglog_format::{
    BatchHeader, Compression, DecodeLimits, HeaderRef, PlainRecordsScan, RecordBatch,
    RecordBatchBuilder,
};

#[derive(Debug, Clone)]
struct Rec {
    offset_gap: i64,
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn rec(max_offset_gap: i64) -> impl Strategy<Value = Rec> {
    (
        1i64..=max_offset_gap,
        prop_oneof![Just(-1i64), Just(0i64), 0i64..=i64::from(u32::MAX) * 1000, 0i64..=i64::MAX],
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..200)),
        proptest::collection::vec(
            ("[a-z]{0,4}", proptest::option::of(proptest::collection::vec(any::<u8>(), 0..6))),
            0..3,
        ),
    )
        .prop_map(|(offset_gap, timestamp, key, value, headers)| Rec {
            offset_gap,
            timestamp,
            key,
            value,
            headers,
        })
}

fn build(records: &[Rec]) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(0).producer(5, 1, 100);
    let mut offset = -1;
    for rec in records {
        offset += rec.offset_gap;
        let headers: Vec<HeaderRef<'_>> =
            rec.headers.iter().map(|(k, v)| HeaderRef { key: k, value: v.as_deref() }).collect();
        builder
            .append(offset, rec.timestamp, rec.key.as_deref(), rec.value.as_deref(), &headers)
            .unwrap();
    }
    builder.build().unwrap()
}

/// What the full decoder makes of the batch, in the scan's terms: `None` when it rejects a
/// record or an offset delta is not the record's index.
fn decoded(batch: &RecordBatch<'_>) -> Option<PlainRecordsScan> {
    let records = batch.records(DecodeLimits::default()).ok()?;
    let mut scan = PlainRecordsScan {
        count: 0,
        min_timestamp: i64::MAX,
        max_timestamp: i64::MIN,
        has_null_key: false,
    };
    for (index, record) in records.iter().enumerate() {
        let record = record.ok()?;
        if record.offset - batch.base_offset() != index as i64 {
            return None;
        }
        scan.count += 1;
        scan.min_timestamp = scan.min_timestamp.min(record.timestamp);
        scan.max_timestamp = scan.max_timestamp.max(record.timestamp);
        scan.has_null_key |= record.key.is_none();
    }
    (scan.count > 0).then_some(scan)
}

/// A change to a valid batch's records section or count: the inputs a hostile producer sends.
#[derive(Debug, Clone)]
enum Damage {
    Flip { at: usize, xor: u8 },
    Set { at: usize, byte: u8 },
    Truncate { keep: usize },
    Extend { bytes: Vec<u8> },
    Count { delta: i32 },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(at, xor)| Damage::Flip { at, xor }),
        (
            any::<usize>(),
            prop_oneof![Just(0x80u8), Just(0xFF), Just(0x01), Just(0x00), any::<u8>()]
        )
            .prop_map(|(at, byte)| Damage::Set { at, byte }),
        any::<usize>().prop_map(|keep| Damage::Truncate { keep }),
        proptest::collection::vec(any::<u8>(), 1..8).prop_map(|bytes| Damage::Extend { bytes }),
        prop_oneof![Just(-1i32), Just(1), Just(-1000), any::<i32>()]
            .prop_map(|delta| Damage::Count { delta }),
    ]
}

fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
    let section = bytes.len() - RECORD_BATCH_OVERHEAD;
    match damage {
        Damage::Flip { at, xor } if section > 0 => {
            bytes[RECORD_BATCH_OVERHEAD + at % section] ^= xor;
        }
        Damage::Set { at, byte } if section > 0 => {
            bytes[RECORD_BATCH_OVERHEAD + at % section] = *byte;
        }
        Damage::Truncate { keep } => bytes.truncate(RECORD_BATCH_OVERHEAD + keep % (section + 1)),
        Damage::Extend { bytes: extra } => bytes.extend_from_slice(extra),
        Damage::Count { delta } => {
            let at = RECORDS_COUNT_OFFSET;
            let count = i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
            bytes[at..at + 4].copy_from_slice(&count.wrapping_add(*delta).to_be_bytes());
        }
        Damage::Flip { .. } | Damage::Set { .. } => {}
    }
    let length = i32::try_from(bytes.len() - 12).unwrap();
    bytes[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
}

/// One record written field by field, each field possibly wrong in one of the ways the decoder
/// checks: a length below -1 or past the end, a null header key, a header count past the end,
/// bytes left in the body, a body length that does not match, an over-long varint.
#[derive(Debug, Clone)]
struct RawRec {
    timestamp_delta: i64,
    offset_delta_shift: i32,
    key_length: Option<i32>,
    value: Vec<u8>,
    value_length_shift: i32,
    headers: Vec<(i32, i32)>,
    header_count_shift: i32,
    trailing: Vec<u8>,
    length_shift: i32,
    overlong_offset_delta: bool,
}

fn raw_rec() -> impl Strategy<Value = RawRec> {
    let rare = |wrong: i32| prop_oneof![8 => Just(0i32), 1 => Just(wrong), 1 => -3i32..3];
    (
        (prop_oneof![Just(0i64), -1000i64..1000, any::<i64>()], rare(1)),
        prop_oneof![Just(None), (0i32..4).prop_map(Some), Just(Some(-1)), Just(Some(-2))],
        (proptest::collection::vec(any::<u8>(), 0..6), rare(1)),
        proptest::collection::vec(
            (prop_oneof![4 => 0i32..3, 1 => Just(-1), 1 => Just(-2)], prop_oneof![-2i32..3]),
            0..3,
        ),
        rare(100),
        prop_oneof![6 => Just(Vec::new()), 1 => proptest::collection::vec(any::<u8>(), 1..3)],
        rare(1),
        prop_oneof![9 => Just(false), 1 => Just(true)],
    )
        .prop_map(
            |(
                (timestamp_delta, offset_delta_shift),
                key_length,
                (value, value_length_shift),
                headers,
                header_count_shift,
                trailing,
                length_shift,
                overlong_offset_delta,
            )| RawRec {
                timestamp_delta,
                offset_delta_shift,
                key_length,
                value,
                value_length_shift,
                headers,
                header_count_shift,
                trailing,
                length_shift,
                overlong_offset_delta,
            },
        )
}

/// The nullable field `length` followed by as many bytes as are there (`max(length, 0)`).
fn put_field(body: &mut Vec<u8>, length: i32) {
    write_varint(body, length);
    body.extend(std::iter::repeat_n(b'x', usize::try_from(length.max(0)).unwrap()));
}

fn raw_batch(recs: &[RawRec], count_shift: i32) -> Vec<u8> {
    let mut payload = Vec::new();
    for (index, rec) in recs.iter().enumerate() {
        let mut body = vec![0u8];
        write_varlong(&mut body, rec.timestamp_delta);
        let offset_delta = index as i32 + rec.offset_delta_shift;
        if rec.overlong_offset_delta {
            // Five bytes, the fifth with its continuation bit: no varint.
            body.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]);
        } else {
            write_varint(&mut body, offset_delta);
        }
        match rec.key_length {
            Some(length) => put_field(&mut body, length),
            None => write_varint(&mut body, -1),
        }
        write_varint(&mut body, rec.value.len() as i32 + rec.value_length_shift);
        body.extend_from_slice(&rec.value);
        write_varint(&mut body, rec.headers.len() as i32 + rec.header_count_shift);
        for &(key_length, value_length) in &rec.headers {
            put_field(&mut body, key_length);
            put_field(&mut body, value_length);
        }
        body.extend_from_slice(&rec.trailing);
        let length = body.len() as i32 + rec.length_shift;
        write_unsigned_varint(&mut payload, ((length << 1) ^ (length >> 31)) as u32);
        payload.extend_from_slice(&body);
    }
    let count = recs.len() as i32;
    BatchHeader {
        base_offset: 0,
        partition_leader_epoch: -1,
        attributes: 0,
        last_offset_delta: count - 1,
        base_timestamp: 1_000,
        max_timestamp: 1_000,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: count + count_shift,
    }
    .encode(&payload)
    .unwrap()
}

proptest! {
    // Each case is a few microseconds; many of them find the rare record with exactly one
    // thing wrong.
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn on_records_written_field_by_field_the_scan_and_the_decoder_agree(
        recs in proptest::collection::vec(raw_rec(), 1..6),
        count_shift in prop_oneof![8 => Just(0i32), 1 => -2i32..3],
    ) {
        let bytes = raw_batch(&recs, count_shift);
        let batch = RecordBatch::new(&bytes).unwrap();
        prop_assert_eq!(batch.scan_plain_records(), decoded(&batch));
    }

    #[test]
    fn the_scan_vouches_for_every_producer_batch_and_agrees_with_the_decoder(
        records in proptest::collection::vec(rec(1), 1..40),
    ) {
        let bytes = build(&records);
        let batch = RecordBatch::new(&bytes).unwrap();
        let scan = batch.scan_plain_records();
        prop_assert!(scan.is_some(), "a producer's contiguous batch was not vouched for");
        prop_assert_eq!(scan, decoded(&batch));
        prop_assert_eq!(scan.unwrap().count as usize, records.len());
    }

    #[test]
    fn the_scan_declines_irregular_offset_deltas(
        records in proptest::collection::vec(rec(3), 2..20),
    ) {
        let bytes = build(&records);
        let batch = RecordBatch::new(&bytes).unwrap();
        let contiguous = records.iter().all(|rec| rec.offset_gap == 1);
        prop_assert_eq!(batch.scan_plain_records().is_some(), contiguous);
    }

    #[test]
    fn whatever_the_scan_vouches_for_the_decoder_accepts_the_same(
        records in proptest::collection::vec(rec(1), 1..12),
        damages in proptest::collection::vec(damage(), 1..4),
    ) {
        let mut bytes = build(&records);
        for damage in &damages {
            apply(&mut bytes, damage);
        }
        let batch = RecordBatch::new(&bytes).unwrap();
        if let Some(scan) = batch.scan_plain_records() {
            prop_assert_eq!(Some(scan), decoded(&batch), "the scan vouched for a batch the decoder reads otherwise");
        }
    }
}

#[test]
fn compressed_and_log_append_time_batches_go_the_full_way() {
    for codec in [Compression::Gzip, Compression::Lz4] {
        let mut builder = RecordBatchBuilder::new(codec);
        builder.push(1_000, Some(b"k"), Some(b"v"), &[]).unwrap();
        let bytes = builder.build().unwrap();
        assert_eq!(RecordBatch::new(&bytes).unwrap().scan_plain_records(), None, "{codec:?}");
    }
    let mut builder = RecordBatchBuilder::new(Compression::None).log_append_time(5_000);
    builder.push(1_000, Some(b"k"), Some(b"v"), &[]).unwrap();
    let bytes = builder.build().unwrap();
    assert_eq!(RecordBatch::new(&bytes).unwrap().scan_plain_records(), None);
    // The same batch as CreateTime is vouched for, with its figures.
    let mut builder = RecordBatchBuilder::new(Compression::None);
    builder.push(1_000, None, Some(b"v"), &[]).unwrap();
    builder.push(900, Some(b"k"), None, &[HeaderRef { key: "h", value: None }]).unwrap();
    let bytes = builder.build().unwrap();
    assert_eq!(
        RecordBatch::new(&bytes).unwrap().scan_plain_records(),
        Some(PlainRecordsScan {
            count: 2,
            min_timestamp: 900,
            max_timestamp: 1_000,
            has_null_key: true
        })
    );
}
