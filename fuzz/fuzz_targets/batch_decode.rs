//! The input is a `.log` file (or a fetched record set): walk every entry of any magic, call every
//! accessor, decompress within 1 MiB and iterate every record and header. Also parses the whole
//! input directly as one v2 batch and as one legacy entry.

#![no_main]

use std::hint::black_box;

use libfuzzer_sys::fuzz_target;
use seglog_format::{
    Batch, Batches, ControlRecordType, DecodeError, DecodeLimits, EndTransactionMarker,
    LegacyEntry, Record, RecordBatch, RecordBatchMut, TimestampType,
};

const LIMITS: DecodeLimits = DecodeLimits { decompressed_bytes_max: 1 << 20 };

fn touch_error(error: &DecodeError) {
    black_box(error.to_string());
    black_box(error.root());
}

fn touch_record(record: &Record<'_>, control: bool) {
    black_box((record.offset, record.timestamp, record.timestamp_type, record.sequence));
    black_box((record.size_bytes, record.key.map(<[u8]>::len), record.value.map(<[u8]>::len)));
    let headers = record.headers;
    black_box((headers.len(), headers.is_empty()));
    let mut seen = 0;
    for header in &headers {
        black_box(header.key_str());
        black_box(header.value);
        seen += 1;
    }
    assert_eq!(seen, headers.len(), "validated headers must all iterate");
    if control {
        if let Some(key) = record.key {
            let _ = black_box(ControlRecordType::parse_key(key));
        }
        if let Some(value) = record.value {
            let _ = black_box(EndTransactionMarker::parse(value));
        }
    }
}

fn touch_batch(batch: &Batch<'_>) {
    black_box(format!("{batch:?}"));
    black_box((batch.as_bytes().len(), batch.size_bytes(), batch.magic()));
    black_box((batch.last_offset(), batch.next_offset(), batch.max_timestamp()));
    black_box((batch.timestamp_type().name(), batch.timestamp_type().id(), batch.crc()));
    black_box((batch.is_valid(), batch.partition_leader_epoch(), batch.producer_id()));
    black_box((batch.producer_epoch(), batch.base_sequence(), batch.last_sequence()));
    black_box((batch.is_transactional(), batch.is_control_batch(), batch.records_count()));
    if let Ok(codec) = batch.compression() {
        black_box(codec.name());
    }
    if let Err(error) = batch.validate() {
        touch_error(&error);
    }
    if let Err(error) = batch.base_offset(LIMITS) {
        touch_error(&error);
    }
    match batch.records(LIMITS) {
        Ok(records) => {
            for record in &records {
                match record {
                    Ok(record) => touch_record(&record, batch.is_control_batch()),
                    Err(error) => touch_error(&error),
                }
            }
        }
        Err(error) => touch_error(&error),
    }
}

fn touch_v2(batch: RecordBatch<'_>) {
    black_box(format!("{batch:?}"));
    black_box((batch.base_offset(), batch.batch_length(), batch.size_bytes()));
    black_box((batch.partition_leader_epoch(), batch.magic(), batch.crc(), batch.compute_crc()));
    black_box((batch.attributes(), batch.timestamp_type(), batch.is_transactional()));
    black_box((batch.is_control_batch(), batch.has_delete_horizon(), batch.delete_horizon_ms()));
    black_box((batch.last_offset_delta(), batch.last_offset(), batch.next_offset()));
    black_box((batch.base_timestamp(), batch.max_timestamp(), batch.producer_id()));
    black_box((batch.producer_epoch(), batch.base_sequence(), batch.last_sequence()));
    black_box((batch.has_producer_id(), batch.records_count(), batch.records_payload().len()));
    black_box(batch.is_valid());
    let _ = black_box(batch.compression());
    let validated = batch.validate_records(LIMITS);
    if let Err(error) = &validated {
        touch_error(error);
    }
    if let Ok(records) = batch.records(LIMITS) {
        let mut all_ok = true;
        for record in &records {
            match record {
                Ok(record) => touch_record(&record, batch.is_control_batch()),
                Err(error) => {
                    touch_error(&error);
                    all_ok = false;
                }
            }
        }
        if validated.is_ok() {
            assert!(all_ok, "validate_records passed but iteration failed");
        }
    }
    // Stamping the fields a broker rewrites must keep the batch valid when it was valid.
    let mut copy = batch.as_bytes().to_vec();
    if let Ok(mut stamped) = RecordBatchMut::new(&mut copy) {
        stamped.set_last_offset(batch.last_offset().wrapping_add(1));
        stamped.set_partition_leader_epoch(7);
        let _ = stamped.set_max_timestamp(TimestampType::LogAppendTime, 42);
        if batch.is_valid() && batch.compression().is_ok() {
            assert!(stamped.as_batch().is_valid(), "stamping broke the CRC");
        }
    }
}

fn touch_legacy(entry: LegacyEntry<'_>) {
    black_box(format!("{entry:?}"));
    black_box((entry.offset(), entry.message_size(), entry.crc(), entry.compute_crc()));
    black_box((entry.magic(), entry.attributes(), entry.timestamp_type(), entry.timestamp()));
    black_box(entry.is_valid());
    let _ = black_box(entry.compression());
    let _ = black_box(entry.key());
    let _ = black_box(entry.value());
    if let Err(error) = entry.validate() {
        touch_error(&error);
    }
    match entry.records(LIMITS) {
        Ok(records) => {
            black_box(records.first_offset());
            for record in &records {
                match record {
                    Ok(record) => touch_record(&record, false),
                    Err(error) => touch_error(&error),
                }
            }
        }
        Err(error) => touch_error(&error),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut batches = Batches::new(data);
    for item in &mut batches {
        match item {
            Ok(positioned) => {
                black_box(positioned.position);
                touch_batch(&positioned.batch);
                match positioned.batch {
                    Batch::V2(batch) => touch_v2(batch),
                    Batch::Legacy(entry) => touch_legacy(entry),
                }
            }
            Err(error) => touch_error(&error),
        }
    }
    black_box((batches.next_position(), batches.remaining_bytes()));

    match Batch::new(data) {
        Ok(batch) => touch_batch(&batch),
        Err(error) => touch_error(&error),
    }
    if let Ok(batch) = RecordBatch::new(data) {
        touch_v2(batch);
    }
    if let Ok(entry) = LegacyEntry::new(data) {
        touch_legacy(entry);
    }
});
