//! One record of a v2 batch (Kafka's `DefaultRecord`), its headers, and the uniform record view
//! that v0, v1 and v2 iteration all yield.
//!
//! ```text
//! Record =>
//!   length          varint   bytes that follow
//!   attributes      int8     unused, 0
//!   timestampDelta  varlong  timestamp - batch baseTimestamp
//!   offsetDelta     varint   offset - batch baseOffset
//!   keyLength       varint   -1 = null
//!   key             bytes
//!   valueLength     varint   -1 = null
//!   value           bytes
//!   headerCount     varint   >= 0
//!   headers         [headerKeyLength varint >= 0, headerKey, headerValueLength varint, value]
//! ```

use std::borrow::Cow;

use crate::batch::TimestampType;
use crate::error::{DecodeError, Result};
use crate::varint::{
    Reader, size_of_unsigned_varint, size_of_varint, size_of_varlong, write_varint, write_varlong,
};

/// The most bytes a v2 record spends on fields other than key, value and headers.
pub const MAX_RECORD_OVERHEAD: usize = 21;

/// One record, from any magic, with offsets and timestamps already made absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    /// The record's absolute offset.
    pub offset: i64,
    /// The record's timestamp as Kafka reports it (the batch's for LogAppendTime), or -1.
    pub timestamp: i64,
    /// How `timestamp` was assigned.
    pub timestamp_type: TimestampType,
    /// The key, or `None` for a null key.
    pub key: Option<&'a [u8]>,
    /// The value, or `None` for a tombstone.
    pub value: Option<&'a [u8]>,
    /// The headers (always empty below magic 2).
    pub headers: Headers<'a>,
    /// The producer sequence of this record, or -1.
    pub sequence: i32,
    /// Bytes this record occupies in its (uncompressed) encoding.
    pub size_bytes: usize,
}

/// The validated header section of a v2 record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Headers<'a> {
    bytes: &'a [u8],
    n_headers: usize,
}

/// One record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// The header key's UTF-8 bytes.
    pub key: &'a [u8],
    /// The header value, or `None` for null.
    pub value: Option<&'a [u8]>,
}

impl<'a> Header<'a> {
    /// The key as text, with invalid UTF-8 replaced (as Java's decoder does).
    pub fn key_str(&self) -> Cow<'a, str> {
        String::from_utf8_lossy(self.key)
    }
}

impl<'a> Headers<'a> {
    /// Number of headers.
    pub fn len(&self) -> usize {
        self.n_headers
    }

    /// True when there are no headers.
    pub fn is_empty(&self) -> bool {
        self.n_headers == 0
    }

    /// The headers in order.
    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter { reader: Reader::new(self.bytes), left: self.n_headers }
    }
}

impl<'a> IntoIterator for &Headers<'a> {
    type Item = Header<'a>;
    type IntoIter = HeaderIter<'a>;
    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for Headers<'a> {
    type Item = Header<'a>;
    type IntoIter = HeaderIter<'a>;
    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

/// Iterator over headers that were validated when their record was decoded.
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    reader: Reader<'a>,
    left: usize,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = Header<'a>;
    fn next(&mut self) -> Option<Header<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The section was validated by `decode_headers`, so these reads cannot fail.
        let key = self.reader.nullable_varint_bytes("header key").ok()??;
        let value = self.reader.nullable_varint_bytes("header value").ok()?;
        Some(Header { key, value })
    }
}

/// Batch-level values a v2 record needs to make its fields absolute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordContext {
    pub(crate) base_offset: i64,
    pub(crate) base_timestamp: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) timestamp_type: TimestampType,
    pub(crate) base_sequence: i32,
}

/// Decodes one v2 record at the reader's position, checking every field as Kafka's
/// `DefaultRecord.readFrom` does.
pub(crate) fn decode_record<'a>(
    reader: &mut Reader<'a>,
    ctx: &RecordContext,
) -> Result<Record<'a>> {
    let start = reader.position();
    let length = reader.varint()?;
    let length_size = reader.position() - start;
    let body_len = usize::try_from(length)
        .map_err(|_| DecodeError::InvalidRecord { at: start, reason: "negative record length" })?;
    let body_at = reader.position();
    let body = reader.bytes(body_len).map_err(|_| DecodeError::InvalidRecord {
        at: start,
        reason: "record length exceeds the bytes left in the batch",
    })?;
    let mut body = Reader::with_origin(body, body_at);
    let _attributes = body.i8()?;
    let timestamp_delta = body.varlong()?;
    let offset_delta = body.varint()?;
    let key = body.nullable_varint_bytes("invalid key length")?;
    let value = body.nullable_varint_bytes("invalid value length")?;
    let headers = decode_headers(&mut body)?;
    if body.remaining() != 0 {
        return Err(DecodeError::InvalidRecordSize {
            expected: body_len,
            actual: body_len - body.remaining(),
        });
    }
    let timestamp = match ctx.timestamp_type {
        TimestampType::LogAppendTime => ctx.max_timestamp,
        _ => ctx.base_timestamp.wrapping_add(timestamp_delta),
    };
    let sequence = if ctx.base_sequence < 0 {
        -1
    } else {
        crate::batch::increment_sequence(ctx.base_sequence, offset_delta)
    };
    Ok(Record {
        offset: ctx.base_offset.wrapping_add(i64::from(offset_delta)),
        timestamp,
        timestamp_type: ctx.timestamp_type,
        key,
        value,
        headers,
        sequence,
        size_bytes: length_size + body_len,
    })
}

/// Reads and validates a header section.
fn decode_headers<'a>(body: &mut Reader<'a>) -> Result<Headers<'a>> {
    let at = body.position();
    let n_headers = body.varint()?;
    let n_headers = usize::try_from(n_headers)
        .map_err(|_| DecodeError::InvalidRecord { at, reason: "negative header count" })?;
    // Every header takes at least two bytes, so a count above the bytes left is a lie that could
    // otherwise make a caller reserve a huge vector.
    if n_headers > body.remaining() {
        return Err(DecodeError::InvalidRecord {
            at,
            reason: "header count exceeds the bytes left",
        });
    }
    let section_start = body.consumed();
    let rest = body.rest();
    for _ in 0..n_headers {
        let key_at = body.position();
        if body.nullable_varint_bytes("invalid header key length")?.is_none() {
            return Err(DecodeError::InvalidRecord { at: key_at, reason: "null header key" });
        }
        body.nullable_varint_bytes("invalid header value length")?;
    }
    let section_len = body.consumed() - section_start;
    Ok(Headers { bytes: rest.get(..section_len).unwrap_or_default(), n_headers })
}

/// A header to be written by the builder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderRef<'a> {
    /// The header key (UTF-8).
    pub key: &'a str,
    /// The value, or `None` for null.
    pub value: Option<&'a [u8]>,
}

fn size_of_nullable(bytes: Option<&[u8]>) -> usize {
    match bytes {
        None => 1,
        Some(bytes) => size_of_varint(bytes.len() as i32) + bytes.len(),
    }
}

/// Appends one encoded v2 record; returns the bytes written.
pub(crate) fn encode_record(
    out: &mut Vec<u8>,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[HeaderRef<'_>],
) -> Result<usize> {
    let mut section = Vec::new();
    for header in headers {
        write_nullable(&mut section, Some(header.key.as_bytes()));
        write_nullable(&mut section, header.value);
    }
    let n_headers = i32::try_from(headers.len())
        .map_err(|_| DecodeError::Unencodable { reason: "too many headers" })?;
    let fields = RecordFields { timestamp_delta, offset_delta, key, value };
    encode_with_header_section(out, &fields, n_headers, &section)
}

/// Appends one encoded v2 record whose header section is copied as it was read (so a header key
/// that is not UTF-8 survives a rewrite byte for byte); returns the bytes written.
pub(crate) fn encode_record_with_headers(
    out: &mut Vec<u8>,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &Headers<'_>,
) -> Result<usize> {
    let n_headers = i32::try_from(headers.n_headers)
        .map_err(|_| DecodeError::Unencodable { reason: "too many headers" })?;
    let fields = RecordFields { timestamp_delta, offset_delta, key, value };
    encode_with_header_section(out, &fields, n_headers, headers.bytes)
}

/// A record's fields other than its headers.
struct RecordFields<'a> {
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
}

/// The record with `n_headers` headers already encoded as `section`.
fn encode_with_header_section(
    out: &mut Vec<u8>,
    fields: &RecordFields<'_>,
    n_headers: i32,
    section: &[u8],
) -> Result<usize> {
    let body_len = 1
        + size_of_varlong(fields.timestamp_delta)
        + size_of_varint(fields.offset_delta)
        + size_of_nullable(fields.key)
        + size_of_nullable(fields.value)
        + size_of_varint(n_headers)
        + section.len();
    let body_len_i32 = i32::try_from(body_len)
        .map_err(|_| DecodeError::Unencodable { reason: "record larger than 2 GiB" })?;
    let start = out.len();
    out.reserve(body_len + 5);
    write_varint(out, body_len_i32);
    out.push(0);
    write_varlong(out, fields.timestamp_delta);
    write_varint(out, fields.offset_delta);
    write_nullable(out, fields.key);
    write_nullable(out, fields.value);
    write_varint(out, n_headers);
    out.extend_from_slice(section);
    debug_assert_eq!(
        out.len() - start,
        size_of_unsigned_varint((body_len_i32 as u32) << 1) + body_len
    );
    Ok(out.len() - start)
}

fn write_nullable(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => write_varint(out, -1),
        Some(bytes) => {
            write_varint(out, bytes.len() as i32);
            out.extend_from_slice(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: RecordContext = RecordContext {
        base_offset: 100,
        base_timestamp: 1_000,
        max_timestamp: 2_000,
        timestamp_type: TimestampType::CreateTime,
        base_sequence: -1,
    };

    fn encode(key: Option<&[u8]>, value: Option<&[u8]>, headers: &[HeaderRef<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_record(&mut out, 5, 2, key, value, headers).unwrap();
        out
    }

    fn decode(bytes: &[u8]) -> Result<Record<'_>> {
        let mut reader = Reader::new(bytes);
        let record = decode_record(&mut reader, &CTX)?;
        assert_eq!(reader.remaining(), 0);
        Ok(record)
    }

    #[test]
    fn basic_serde_with_and_without_key_value_and_headers() {
        let headers =
            [HeaderRef { key: "h1", value: Some(b"v1") }, HeaderRef { key: "h2", value: None }];
        for (key, value, headers) in [
            (Some(&b"key"[..]), Some(&b"value"[..]), &headers[..]),
            (None, Some(&b"value"[..]), &[][..]),
            (Some(&b"key"[..]), None, &headers[..1]),
            (None, None, &[][..]),
            (Some(&b""[..]), Some(&b""[..]), &headers[1..]),
        ] {
            let bytes = encode(key, value, headers);
            let record = decode(&bytes).unwrap();
            assert_eq!(record.offset, 102);
            assert_eq!(record.timestamp, 1_005);
            assert_eq!(record.key, key);
            assert_eq!(record.value, value);
            assert_eq!(record.sequence, -1);
            assert_eq!(record.size_bytes, bytes.len());
            let decoded: Vec<_> = record.headers.iter().collect();
            assert_eq!(decoded.len(), headers.len());
            for (decoded, header) in decoded.iter().zip(headers) {
                assert_eq!(decoded.key, header.key.as_bytes());
                assert_eq!(decoded.value, header.value);
            }
        }
    }

    /// Bytes of a record whose body is `body` (the length prefix is computed).
    fn with_length(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(&mut out, body.len() as i32);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn malformed_fields_are_errors() {
        // attributes 0, timestampDelta 0, offsetDelta 0, then the fields under test.
        let cases: &[(&str, &[u8])] = &[
            ("key size too large", &[0, 0, 0, 0x0A, b'a', 0x01, 0x00]),
            ("key size too small", &[0, 0, 0, 0x03, 0x01, 0x00]),
            ("value size too large", &[0, 0, 0, 0x01, 0x0A, b'a', 0x00]),
            ("value size too small", &[0, 0, 0, 0x01, 0x03, 0x00]),
            ("header count too high", &[0, 0, 0, 0x01, 0x01, 0x08, 0x02, b'h', 0x01]),
            ("header count too low", &[0, 0, 0, 0x01, 0x01, 0x01]),
            ("null header key", &[0, 0, 0, 0x01, 0x01, 0x02, 0x01, 0x01]),
            ("invalid header key size", &[0, 0, 0, 0x01, 0x01, 0x02, 0x0A, b'h', 0x01]),
            ("invalid header value size", &[0, 0, 0, 0x01, 0x01, 0x02, 0x02, b'h', 0x0A]),
            ("underflow reading timestamp", &[0]),
            ("underflow reading varlong", &[0, 0x80, 0x80]),
            (
                "invalid varlong",
                &[0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
            ),
            ("trailing bytes in body", &[0, 0, 0, 0x01, 0x01, 0x00, 0xAA]),
        ];
        for (name, body) in cases {
            let bytes = with_length(body);
            assert!(decode(&bytes).is_err(), "{name}: {:?}", decode(&bytes));
        }
    }

    #[test]
    fn invalid_size_of_body_is_an_error() {
        let mut bytes = encode(Some(b"k"), Some(b"v"), &[]);
        bytes[0] = 0x40; // length 32, far more than there is
        assert!(decode(&bytes).is_err());
        let mut bytes = encode(Some(b"k"), Some(b"v"), &[]);
        bytes[0] = 0x01; // length -1
        assert_eq!(
            decode(&bytes),
            Err(DecodeError::InvalidRecord { at: 0, reason: "negative record length" })
        );
    }

    #[test]
    fn trailing_bytes_inside_the_length_give_an_invalid_size() {
        let mut body = encode(None, Some(b"v"), &[]);
        body.remove(0);
        body.push(0x00);
        let bytes = with_length(&body);
        assert_eq!(
            decode(&bytes),
            Err(DecodeError::InvalidRecordSize { expected: body.len(), actual: body.len() - 1 })
        );
    }

    #[test]
    fn sequence_follows_base_sequence() {
        let bytes = encode(None, Some(b"v"), &[]);
        let mut reader = Reader::new(&bytes);
        let ctx = RecordContext { base_sequence: i32::MAX - 1, ..CTX };
        // offsetDelta 2 from MAX-1 wraps to 0.
        assert_eq!(decode_record(&mut reader, &ctx).unwrap().sequence, 0);
    }
}
