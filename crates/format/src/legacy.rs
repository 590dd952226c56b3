//! Legacy magic 0 and 1 messages (Kafka's `LegacyRecord` and `AbstractLegacyRecordBatch`), read
//! only, including compressed wrapper messages that hold an inner message set (spec §2).
//!
//! ```text
//! LogEntry   => offset int64 | size int32 | Message(size bytes)
//! Message v0 => crc uint32 | magic int8 | attributes int8 |                  key | value
//! Message v1 => crc uint32 | magic int8 | attributes int8 | timestamp int64 | key | value
//! key, value => length int32 (-1 = null) | bytes
//! crc        =  CRC-32 (IEEE) from magic to the end of the message
//! ```

use crate::batch::{LOG_OVERHEAD, NO_TIMESTAMP, TimestampType};
use crate::compression::{Compression, DecodeLimits, decompress_magic};
use crate::error::{DecodeError, Result};
use crate::record::{Headers, Record};
use crate::varint::Reader;

/// Smallest legal v0 message (crc, magic, attributes, key and value lengths).
pub const RECORD_OVERHEAD_V0: usize = 14;
/// Smallest legal v1 message (v0 plus the timestamp).
pub const RECORD_OVERHEAD_V1: usize = 22;

const MESSAGE_OFFSET: usize = LOG_OVERHEAD;
const MAGIC_AT: usize = MESSAGE_OFFSET + 4;
const ATTRIBUTES_AT: usize = MESSAGE_OFFSET + 5;
const TIMESTAMP_AT: usize = MESSAGE_OFFSET + 6;
const COMPRESSION_MASK: u8 = 0x07;
const TIMESTAMP_TYPE_MASK: u8 = 0x08;

/// A message's key and value, each `None` when null.
type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A view over one legacy log entry: offset, size and a magic 0 or 1 message.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LegacyEntry<'a> {
    bytes: &'a [u8],
}

impl std::fmt::Debug for LegacyEntry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyEntry")
            .field("offset", &self.offset())
            .field("magic", &self.magic())
            .field("size_bytes", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

fn be<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut array = [0u8; N];
    if let Some(slice) = bytes.get(at..at + N) {
        array.copy_from_slice(slice);
    }
    array
}

impl<'a> LegacyEntry<'a> {
    /// A view over `bytes`, which must be exactly one entry whose message is at least 14 bytes.
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        if bytes.len() < LOG_OVERHEAD {
            return Err(DecodeError::Truncated { needed: LOG_OVERHEAD, available: bytes.len() });
        }
        let size = i32::from_be_bytes(be(bytes, 8));
        if size < RECORD_OVERHEAD_V0 as i32 {
            return Err(DecodeError::EntryTooSmall { size });
        }
        let needed = LOG_OVERHEAD + size as usize;
        if needed != bytes.len() {
            return Err(DecodeError::Truncated { needed, available: bytes.len() });
        }
        Ok(Self { bytes })
    }

    /// The entry's bytes, prefix included.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The entry's offset: for a compressed wrapper, the offset of its last inner message.
    pub fn offset(&self) -> i64 {
        i64::from_be_bytes(be(self.bytes, 0))
    }

    /// The message size field.
    pub fn message_size(&self) -> i32 {
        i32::from_be_bytes(be(self.bytes, 8))
    }

    /// The stored CRC-32.
    pub fn crc(&self) -> u32 {
        u32::from_be_bytes(be(self.bytes, MESSAGE_OFFSET))
    }

    /// The CRC-32 (IEEE) the message should have.
    pub fn compute_crc(&self) -> u32 {
        crc32fast::hash(self.bytes.get(MAGIC_AT..).unwrap_or_default())
    }

    /// The magic byte.
    pub fn magic(&self) -> i8 {
        i8::from_be_bytes(be(self.bytes, MAGIC_AT))
    }

    /// The attributes byte.
    pub fn attributes(&self) -> u8 {
        u8::from_be_bytes(be(self.bytes, ATTRIBUTES_AT))
    }

    /// The codec of the value (zstd is not legal below magic 2).
    pub fn compression(&self) -> Result<Compression> {
        match Compression::from_id(self.attributes() & COMPRESSION_MASK)? {
            Compression::Zstd => Err(DecodeError::InvalidWrapper {
                reason: "zstd is not allowed in magic 0 or 1 messages",
            }),
            codec => Ok(codec),
        }
    }

    /// NoTimestampType for magic 0; CreateTime or LogAppendTime for magic 1.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.magic() == 0 {
            TimestampType::NoTimestampType
        } else if self.attributes() & TIMESTAMP_TYPE_MASK == 0 {
            TimestampType::CreateTime
        } else {
            TimestampType::LogAppendTime
        }
    }

    /// The v1 timestamp, or -1 for magic 0.
    pub fn timestamp(&self) -> i64 {
        if self.magic() == 0 {
            NO_TIMESTAMP
        } else {
            i64::from_be_bytes(be(self.bytes, TIMESTAMP_AT))
        }
    }

    fn key_value(&self) -> Result<KeyValue<'a>> {
        let key_at = if self.magic() == 0 { TIMESTAMP_AT } else { TIMESTAMP_AT + 8 };
        let mut reader = Reader::with_origin(self.bytes.get(key_at..).unwrap_or_default(), key_at);
        let mut sized = |what: &'static str| -> Result<Option<&'a [u8]>> {
            let at = reader.position();
            match reader.i32()? {
                -1 => Ok(None),
                len if len < -1 => Err(DecodeError::InvalidRecord { at, reason: what }),
                len => reader
                    .bytes(len as usize)
                    .map(Some)
                    .map_err(|_| DecodeError::InvalidRecord { at, reason: what }),
            }
        };
        let key = sized("invalid key length")?;
        let value = sized("invalid value length")?;
        Ok((key, value))
    }

    /// The key, or `None` when null.
    pub fn key(&self) -> Result<Option<&'a [u8]>> {
        Ok(self.key_value()?.0)
    }

    /// The value, or `None` when null.
    pub fn value(&self) -> Result<Option<&'a [u8]>> {
        Ok(self.key_value()?.1)
    }

    /// Kafka's `isValid`: the CRC matches.
    pub fn is_valid(&self) -> bool {
        self.crc() == self.compute_crc()
    }

    /// Checks the magic, the size for that magic, the CRC, the codec and the key/value framing.
    pub fn validate(&self) -> Result<()> {
        let overhead = match self.magic() {
            0 => RECORD_OVERHEAD_V0,
            1 => RECORD_OVERHEAD_V1,
            other => return Err(DecodeError::UnsupportedMagic(other)),
        };
        if (self.message_size() as usize) < overhead {
            return Err(DecodeError::EntryTooSmall { size: self.message_size() });
        }
        let (stored, computed) = (self.crc(), self.compute_crc());
        if stored != computed {
            return Err(DecodeError::CrcMismatch { stored, computed });
        }
        self.compression()?;
        self.key_value()?;
        Ok(())
    }

    /// The records: the message itself, or the inner messages of a compressed wrapper.
    pub fn records(&self, limits: DecodeLimits) -> Result<LegacyRecords<'a>> {
        self.validate()?;
        let codec = self.compression()?;
        if codec == Compression::None {
            return Ok(LegacyRecords::Single(*self));
        }
        let (_, value) = self.key_value()?;
        let value = value.ok_or(DecodeError::InvalidWrapper { reason: "null wrapper value" })?;
        let data = decompress_magic(codec, value, limits, self.magic())?;
        let inner = scan_inner(&data, self.magic())?;
        let last_relative = inner.last().map_or(0, |entry| entry.offset);
        let base = match self.magic() {
            0 => 0,
            _ if self.offset() == 0 => 0,
            _ => {
                if self.offset() < last_relative {
                    return Err(DecodeError::InvalidWrapper {
                        reason: "wrapper offset is smaller than the last inner relative offset",
                    });
                }
                self.offset().checked_sub(last_relative).ok_or(DecodeError::InvalidWrapper {
                    reason: "wrapper offset minus the last inner relative offset overflows",
                })?
            }
        };
        Ok(LegacyRecords::Wrapper { wrapper: *self, data, inner, base })
    }

    /// Makes the uniform record for this (uncompressed) message.
    fn to_record(self, offset: i64, wrapper: Option<&LegacyEntry<'_>>) -> Result<Record<'a>> {
        let (key, value) = self.key_value()?;
        let (timestamp, timestamp_type) = match wrapper {
            Some(wrapper) if wrapper.timestamp_type() == TimestampType::LogAppendTime => {
                (wrapper.timestamp(), TimestampType::LogAppendTime)
            }
            Some(wrapper) => (self.timestamp(), wrapper.timestamp_type()),
            None => (self.timestamp(), self.timestamp_type()),
        };
        Ok(Record {
            offset,
            timestamp,
            timestamp_type,
            key,
            value,
            headers: Headers::default(),
            sequence: -1,
            size_bytes: self.bytes.len(),
        })
    }
}

/// Where an inner message sits in the decompressed wrapper value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InnerEntry {
    offset: i64,
    start: usize,
    end: usize,
}

/// Splits a decompressed inner message set into entries, checking each.
fn scan_inner(data: &[u8], wrapper_magic: i8) -> Result<Vec<InnerEntry>> {
    let mut inner = Vec::new();
    let mut reader = Reader::new(data);
    while reader.remaining() > 0 {
        let start = reader.consumed();
        let offset = reader.i64()?;
        let size = reader.i32()?;
        if size < RECORD_OVERHEAD_V0 as i32 {
            return Err(DecodeError::EntryTooSmall { size }.at(start as u64));
        }
        reader.bytes(size as usize).map_err(|error| error.at(start as u64))?;
        let entry = LegacyEntry::new(data.get(start..reader.consumed()).unwrap_or_default())?;
        if entry.magic() != wrapper_magic {
            return Err(DecodeError::InvalidWrapper {
                reason: "compressed message magic does not match wrapper magic",
            });
        }
        entry.validate().map_err(|error| error.at(start as u64))?;
        if entry.compression()? != Compression::None {
            return Err(DecodeError::InvalidWrapper { reason: "inner message is compressed" });
        }
        if let Some(previous) = inner.last().map(|entry: &InnerEntry| entry.offset)
            && offset <= previous
        {
            return Err(DecodeError::InvalidWrapper { reason: "inner offsets must increase" });
        }
        inner.push(InnerEntry { offset, start, end: reader.consumed() });
    }
    if inner.is_empty() {
        return Err(DecodeError::InvalidWrapper { reason: "empty inner message set" });
    }
    Ok(inner)
}

/// The records of one legacy entry.
#[derive(Debug, Clone)]
pub enum LegacyRecords<'a> {
    /// An uncompressed message is its own single record.
    Single(LegacyEntry<'a>),
    /// A compressed wrapper and its decompressed inner messages.
    Wrapper {
        /// The wrapper message.
        wrapper: LegacyEntry<'a>,
        /// The decompressed inner message set.
        data: Vec<u8>,
        /// Where each inner message is.
        inner: Vec<InnerEntry>,
        /// Added to inner offsets to make them absolute.
        base: i64,
    },
}

impl LegacyRecords<'_> {
    /// The records, with absolute offsets (relative v1 inner offsets resolved).
    pub fn iter(&self) -> LegacyRecordIter<'_> {
        LegacyRecordIter { records: self, next_idx: 0 }
    }

    /// The offset of the first record.
    pub fn first_offset(&self) -> i64 {
        match self {
            Self::Single(entry) => entry.offset(),
            Self::Wrapper { inner, base, .. } => {
                inner.first().map_or(*base, |entry| base + entry.offset)
            }
        }
    }
}

impl<'b> IntoIterator for &'b LegacyRecords<'b> {
    type Item = Result<Record<'b>>;
    type IntoIter = LegacyRecordIter<'b>;
    fn into_iter(self) -> LegacyRecordIter<'b> {
        self.iter()
    }
}

/// Iterator over a legacy entry's records.
#[derive(Debug, Clone)]
pub struct LegacyRecordIter<'a> {
    records: &'a LegacyRecords<'a>,
    next_idx: usize,
}

impl<'a> Iterator for LegacyRecordIter<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let idx = self.next_idx;
        self.next_idx += 1;
        match self.records {
            LegacyRecords::Single(entry) => {
                (idx == 0).then(|| entry.to_record(entry.offset(), None))
            }
            LegacyRecords::Wrapper { wrapper, data, inner, base } => {
                let found = inner.get(idx)?;
                let bytes = data.get(found.start..found.end).unwrap_or_default();
                Some(LegacyEntry::new(bytes).and_then(|entry| {
                    entry.to_record(base.wrapping_add(found.offset), Some(wrapper))
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    /// Spec §2.3, v1: offset 0, CreateTime 1700000000000, key null, value `hello`.
    #[test]
    fn worked_example_v1() {
        let bytes = hex(
            "00 00 00 00 00 00 00 00 | 00 00 00 1b | 8e e3 0b ba | 01 | 00 | 00 00 01 8b cf e5 68 00 | ff ff ff ff | 00 00 00 05 | 68 65 6c 6c 6f",
        );
        let entry = LegacyEntry::new(&bytes).unwrap();
        entry.validate().unwrap();
        assert_eq!(entry.crc(), 0x8EE3_0BBA);
        assert_eq!(entry.magic(), 1);
        assert_eq!(entry.timestamp(), 1_700_000_000_000);
        assert_eq!(entry.timestamp_type(), TimestampType::CreateTime);
        assert_eq!(entry.key().unwrap(), None);
        assert_eq!(entry.value().unwrap(), Some(&b"hello"[..]));
    }

    /// Spec §2.3, v0: offset 0, key null, value `hello`.
    #[test]
    fn worked_example_v0() {
        let bytes = hex(
            "00 00 00 00 00 00 00 00 | 00 00 00 13 | 87 a7 7a b2 | 00 | 00 | ff ff ff ff | 00 00 00 05 | 68 65 6c 6c 6f",
        );
        let entry = LegacyEntry::new(&bytes).unwrap();
        entry.validate().unwrap();
        assert_eq!(entry.compute_crc(), 2_275_900_082);
        assert_eq!(entry.timestamp(), -1);
        assert_eq!(entry.timestamp_type(), TimestampType::NoTimestampType);
        let records = entry.records(DecodeLimits::default()).unwrap();
        let record = records.iter().next().unwrap().unwrap();
        assert_eq!((record.offset, record.value), (0, Some(&b"hello"[..])));
    }

    #[test]
    fn checksum_covers_magic_to_end() {
        let mut bytes = hex(
            "00 00 00 00 00 00 00 00 | 00 00 00 13 | 87 a7 7a b2 | 00 | 00 | ff ff ff ff | 00 00 00 05 | 68 65 6c 6c 6f",
        );
        *bytes.last_mut().unwrap() ^= 1;
        let entry = LegacyEntry::new(&bytes).unwrap();
        assert!(!entry.is_valid());
        assert_eq!(
            entry.validate(),
            Err(DecodeError::CrcMismatch { stored: 0x87A7_7AB2, computed: entry.compute_crc() })
        );
    }

    #[test]
    fn oversized_key_length_is_an_error() {
        let mut bytes = hex(
            "00 00 00 00 00 00 00 00 | 00 00 00 13 | 00 00 00 00 | 00 | 00 | 00 00 00 50 | 00 00 00 05 | 68 65 6c 6c 6f",
        );
        let crc = crc32fast::hash(&bytes[16..]);
        bytes[12..16].copy_from_slice(&crc.to_be_bytes());
        let entry = LegacyEntry::new(&bytes).unwrap();
        assert_eq!(
            entry.validate(),
            Err(DecodeError::InvalidRecord { at: 18, reason: "invalid key length" })
        );
    }
}
