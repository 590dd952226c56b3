//! One allocation-free pass over an uncompressed v2 batch's records: the append path's fast check.
//!
//! Kafka's `LogValidator` decodes every record of an uncompressed batch
//! (`DefaultRecord.readFrom`) to check it. [`RecordBatch::scan_plain_records`] makes the same
//! structural checks, record by record, without building a [`crate::Record`], and returns only
//! what the validator needs: how many records there are, the range of their timestamps and
//! whether one has a null key.
//!
//! It answers only for what it can vouch for: every input it accepts, the full decoder
//! ([`RecordBatch::records`]) accepts too, with the same records. Anything else, a malformed
//! record or merely an unusual one (an offset delta other than the record's index, a
//! LogAppendTime batch, a compressed one), is `None`, and the caller decodes the records the
//! full way, which finds the same records or says precisely what is wrong and where. So the
//! error messages stay those of the decoder, and this file never needs one.

use crate::batch::{RecordBatch, TimestampType};
use crate::compression::Compression;
use crate::varint::{VARINT_BYTES_MAX, VARLONG_BYTES_MAX};

/// What [`RecordBatch::scan_plain_records`] found in a batch it vouches for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainRecordsScan {
    /// The records, `recordsCount` (at least one).
    pub count: i32,
    /// The smallest record timestamp (`baseTimestamp` plus the record's delta, wrapping).
    pub min_timestamp: i64,
    /// The largest record timestamp.
    pub max_timestamp: i64,
    /// Whether some record has a null key.
    pub has_null_key: bool,
}

impl RecordBatch<'_> {
    /// Checks every record of an uncompressed CreateTime batch in one pass, as the full decoder
    /// would, and requires each record's offset delta to be its index (the in-place case of
    /// Kafka's validator). `None` means "decode it the full way": the batch is compressed, has
    /// LogAppendTime, no records, an irregular offset delta, or a record the decoder may reject.
    /// The batch header (magic, CRC) is not checked here.
    pub fn scan_plain_records(&self) -> Option<PlainRecordsScan> {
        if self.compression().ok()? != Compression::None
            || self.timestamp_type() == TimestampType::LogAppendTime
        {
            return None;
        }
        let count = self.records_count();
        if count <= 0 {
            return None;
        }
        let base_timestamp = self.base_timestamp();
        let mut scan = PlainRecordsScan {
            count,
            min_timestamp: i64::MAX,
            max_timestamp: i64::MIN,
            has_null_key: false,
        };
        let mut rest = self.records_payload();
        for index in 0..count {
            let (length, after) = varint(rest)?;
            let length = usize::try_from(length).ok()?;
            if length > after.len() {
                return None;
            }
            let (body, next) = after.split_at(length);
            rest = next;
            let (timestamp_delta, offset_delta, has_key) = scan_record_body(body)?;
            if offset_delta != index {
                return None;
            }
            let timestamp = base_timestamp.wrapping_add(timestamp_delta);
            scan.min_timestamp = scan.min_timestamp.min(timestamp);
            scan.max_timestamp = scan.max_timestamp.max(timestamp);
            scan.has_null_key |= !has_key;
        }
        rest.is_empty().then_some(scan)
    }
}

/// One record's body after its length: (timestampDelta, offsetDelta, whether the key is
/// non-null), or `None` if anything in it is off or it does not end exactly at the body's end.
#[inline]
fn scan_record_body(body: &[u8]) -> Option<(i64, i32, bool)> {
    let (_attributes, body) = body.split_first()?;
    let (timestamp_delta, body) = varlong(body)?;
    let (offset_delta, body) = varint(body)?;
    let (key_length, body) = varint(body)?;
    let body = skip_nullable(body, key_length)?;
    let (value_length, body) = varint(body)?;
    let body = skip_nullable(body, value_length)?;
    let (n_headers, mut body) = varint(body)?;
    let n_headers = usize::try_from(n_headers).ok()?;
    // The decoder's bound: every header takes at least two bytes.
    if n_headers > body.len() {
        return None;
    }
    for _ in 0..n_headers {
        let (header_key_length, after) = varint(body)?;
        if header_key_length < 0 {
            return None;
        }
        let after = skip_nullable(after, header_key_length)?;
        let (value_length, after) = varint(after)?;
        body = skip_nullable(after, value_length)?;
    }
    body.is_empty().then_some((timestamp_delta, offset_delta, key_length != -1))
}

/// The bytes after a nullable field of `length` (-1 is null); `None` for a length below -1 or
/// past the end.
#[inline]
fn skip_nullable(bytes: &[u8], length: i32) -> Option<&[u8]> {
    match length {
        -1 => Some(bytes),
        length => bytes.get(usize::try_from(length).ok()?..),
    }
}

/// A ZigZag varint of at most five bytes and the bytes after it, decoded exactly as
/// [`crate::varint::Reader::varint`] does.
#[inline]
fn varint(bytes: &[u8]) -> Option<(i32, &[u8])> {
    let (&first, rest) = bytes.split_first()?;
    if first & 0x80 == 0 {
        let raw = u32::from(first);
        return Some((((raw >> 1) as i32) ^ -((raw & 1) as i32), rest));
    }
    // Two bytes: a record's length and a value's length of up to 8 KiB.
    if let Some((&second, after)) = rest.split_first()
        && second & 0x80 == 0
    {
        let raw = u32::from(first & 0x7f) | (u32::from(second) << 7);
        return Some((((raw >> 1) as i32) ^ -((raw & 1) as i32), after));
    }
    let mut raw: u32 = 0;
    for (byte_idx, &byte) in bytes.iter().take(VARINT_BYTES_MAX).enumerate() {
        raw |= u32::from(byte & 0x7f) << (7 * byte_idx);
        if byte & 0x80 == 0 {
            let rest = bytes.get(byte_idx + 1..)?;
            return Some((((raw >> 1) as i32) ^ -((raw & 1) as i32), rest));
        }
    }
    None
}

/// A ZigZag varlong of at most ten bytes and the bytes after it, decoded exactly as
/// [`crate::varint::Reader::varlong`] does.
#[inline]
fn varlong(bytes: &[u8]) -> Option<(i64, &[u8])> {
    let (&first, rest) = bytes.split_first()?;
    if first & 0x80 == 0 {
        let raw = u64::from(first);
        return Some((((raw >> 1) as i64) ^ -((raw & 1) as i64), rest));
    }
    let mut raw: u64 = 0;
    for (byte_idx, &byte) in bytes.iter().take(VARLONG_BYTES_MAX).enumerate() {
        raw |= u64::from(byte & 0x7f) << (7 * byte_idx);
        if byte & 0x80 == 0 {
            let rest = bytes.get(byte_idx + 1..)?;
            return Some((((raw >> 1) as i64) ^ -((raw & 1) as i64), rest));
        }
    }
    None
}
