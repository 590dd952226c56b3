//! Producer-state snapshots, the `.snapshot` files of a partition directory (spec section 3.9;
//! Kafka's `ProducerStateManager.writeSnapshot` and `readSnapshot`, snapshot version 1).
//!
//! A snapshot named `<offset>.snapshot` holds, for every producer, the state left by the batches
//! below `<offset>`: its epoch and its last batch only (Kafka keeps the last five batches in memory
//! but writes one). All fields are big-endian.
//!
//! ```text
//! offset  bytes  field
//!      0      2  version               int16   1
//!      2      4  crc                   uint32  CRC-32C of every byte from offset 6 to the end
//!      6      4  producer_entries      int32   count, then count entries of 46 bytes:
//!     +0      8    producer_id              int64
//!     +8      2    epoch                    int16
//!    +10      4    last_sequence            int32
//!    +14      8    last_offset              int64   -1: no batch (the entry is epoch only)
//!    +22      4    offset_delta             int32   last_offset - first offset of the last batch
//!    +26      8    timestamp                int64   max timestamp of the last batch
//!    +34      4    coordinator_epoch        int32   -1 when no transaction marker was written
//!    +38      8    current_txn_first_offset int64   -1 when no transaction is open
//! ```
//!
//! The reader checks what Kafka's does, in Kafka's order: the whole structure first (a field that
//! runs past the end, or an array count that is negative or larger than the bytes left, is a
//! [`DecodeError::SchemaField`] naming the field), then the version, then the CRC. Bytes after
//! the last entry are covered by the CRC and otherwise ignored, as Kafka ignores them.

use crate::batch::decrement_sequence;
use crate::error::{DecodeError, Result};
use crate::varint::Reader;

/// The only snapshot version (Kafka's `PRODUCER_SNAPSHOT_VERSION`).
pub const PRODUCER_SNAPSHOT_VERSION: i16 = 1;

/// Where the CRC field is.
const CRC_OFFSET: usize = 2;

/// Where the CRC-covered part starts: after the version (2 bytes) and the CRC (4 bytes).
pub const PRODUCER_ENTRIES_OFFSET: usize = 6;

/// Bytes of one producer entry.
pub const PRODUCER_SNAPSHOT_ENTRY_BYTES: usize = 46;

const _: () = assert!(PRODUCER_SNAPSHOT_ENTRY_BYTES == 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8);
const _: () = assert!(PRODUCER_ENTRIES_OFFSET == CRC_OFFSET + 4);

/// What the errors of this file are called in [`DecodeError::UnsupportedVersion`].
const FILE: &str = "producer snapshot";

/// One producer's entry (the fields Kafka's `ProducerStateEntry` writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProducerSnapshotEntry {
    /// The producer id.
    pub producer_id: i64,
    /// The producer's current epoch.
    pub producer_epoch: i16,
    /// The sequence of the last record of its last batch.
    pub last_sequence: i32,
    /// The offset of the last record of its last batch, or -1 when it has no batch.
    pub last_offset: i64,
    /// `last_offset` minus the offset of the first record of the last batch (equal to the
    /// batch's last sequence minus its first sequence).
    pub offset_delta: i32,
    /// The max timestamp of the last batch (Kafka's `lastTimestamp`).
    pub timestamp: i64,
    /// The epoch of the last transaction coordinator that wrote a marker, or -1.
    pub coordinator_epoch: i32,
    /// The first offset of the open transaction, or -1.
    pub current_txn_first_offset: i64,
}

impl ProducerSnapshotEntry {
    /// Whether the entry describes a batch (`last_offset >= 0`); otherwise only the epoch (and
    /// transaction fields) are known, as after a transaction marker.
    pub fn has_batch(&self) -> bool {
        self.last_offset >= 0
    }

    /// The base sequence of the last batch (Kafka's `BatchMetadata.firstSeq`).
    pub fn first_sequence(&self) -> i32 {
        decrement_sequence(self.last_sequence, self.offset_delta)
    }

    /// The offset of the first record of the last batch (Kafka's `BatchMetadata.firstOffset`).
    pub fn first_offset(&self) -> i64 {
        self.last_offset.saturating_sub(i64::from(self.offset_delta))
    }
}

/// Encodes a snapshot of `entries`, in the order given (Kafka writes them in its map's order,
/// which a reader must not rely on).
pub fn encode_producer_snapshot(entries: &[ProducerSnapshotEntry]) -> Result<Vec<u8>> {
    let count = i32::try_from(entries.len())
        .map_err(|_| DecodeError::Unencodable { reason: "more than 2^31 - 1 producer entries" })?;
    let mut bytes = Vec::with_capacity(
        PRODUCER_ENTRIES_OFFSET + 4 + entries.len() * PRODUCER_SNAPSHOT_ENTRY_BYTES,
    );
    bytes.extend_from_slice(&PRODUCER_SNAPSHOT_VERSION.to_be_bytes());
    // The CRC is filled in once the entries are written.
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(&count.to_be_bytes());
    for entry in entries {
        bytes.extend_from_slice(&entry.producer_id.to_be_bytes());
        bytes.extend_from_slice(&entry.producer_epoch.to_be_bytes());
        bytes.extend_from_slice(&entry.last_sequence.to_be_bytes());
        bytes.extend_from_slice(&entry.last_offset.to_be_bytes());
        bytes.extend_from_slice(&entry.offset_delta.to_be_bytes());
        bytes.extend_from_slice(&entry.timestamp.to_be_bytes());
        bytes.extend_from_slice(&entry.coordinator_epoch.to_be_bytes());
        bytes.extend_from_slice(&entry.current_txn_first_offset.to_be_bytes());
    }
    let crc = crc32c::crc32c(bytes.get(PRODUCER_ENTRIES_OFFSET..).unwrap_or_default());
    if let Some(field) = bytes.get_mut(CRC_OFFSET..PRODUCER_ENTRIES_OFFSET) {
        field.copy_from_slice(&crc.to_be_bytes());
    }
    Ok(bytes)
}

/// Decodes and checks a snapshot (Kafka's `readSnapshot`). Errors, in the order Kafka finds
/// them: [`DecodeError::SchemaField`] (a field runs past the end, or the entry count is
/// impossible), [`DecodeError::UnsupportedVersion`], [`DecodeError::CrcMismatch`]. Nothing is
/// reserved beyond what the bytes left can hold.
pub fn decode_producer_snapshot(bytes: &[u8]) -> Result<Vec<ProducerSnapshotEntry>> {
    let mut reader = Reader::new(bytes);
    let version = field("version", reader.i16())?;
    let stored = field("crc", reader.u32())?;
    let entries = field("producer_entries", read_entries(&mut reader))?;
    if version != PRODUCER_SNAPSHOT_VERSION {
        return Err(DecodeError::UnsupportedVersion { file: FILE, version });
    }
    let computed = crc32c::crc32c(bytes.get(PRODUCER_ENTRIES_OFFSET..).unwrap_or_default());
    if stored != computed {
        return Err(DecodeError::CrcMismatch { stored, computed });
    }
    Ok(entries)
}

/// Names the field an error was found in.
fn field<T>(name: &'static str, result: Result<T>) -> Result<T> {
    result.map_err(|source| DecodeError::SchemaField { field: name, source: Box::new(source) })
}

/// The `producer_entries` array (Kafka's `ArrayOf.read` of the entry schema).
fn read_entries(reader: &mut Reader<'_>) -> Result<Vec<ProducerSnapshotEntry>> {
    let size = reader.i32()?;
    let available = reader.remaining();
    // Kafka's check compares the count with the bytes (not the entries) left.
    let Ok(count) = usize::try_from(size) else {
        return Err(DecodeError::ArraySize { size, available });
    };
    if count > available {
        return Err(DecodeError::ArraySize { size, available });
    }
    let mut entries = Vec::with_capacity(count.min(available / PRODUCER_SNAPSHOT_ENTRY_BYTES));
    for _ in 0..count {
        // Fields are read in the order they are written (struct expressions evaluate in order).
        entries.push(ProducerSnapshotEntry {
            producer_id: field("producer_id", reader.i64())?,
            producer_epoch: field("epoch", reader.i16())?,
            last_sequence: field("last_sequence", reader.i32())?,
            last_offset: field("last_offset", reader.i64())?,
            offset_delta: field("offset_delta", reader.i32())?,
            timestamp: field("timestamp", reader.i64())?,
            coordinator_epoch: field("coordinator_epoch", reader.i32())?,
            current_txn_first_offset: field("current_txn_first_offset", reader.i64())?,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(producer_id: i64, last_sequence: i32, last_offset: i64) -> ProducerSnapshotEntry {
        ProducerSnapshotEntry {
            producer_id,
            producer_epoch: 3,
            last_sequence,
            last_offset,
            offset_delta: 2,
            timestamp: 1_700_000_000_123,
            coordinator_epoch: -1,
            current_txn_first_offset: -1,
        }
    }

    /// Golden bytes written out by hand from the layout; the CRC was computed independently of
    /// this crate (a bitwise CRC-32C over bytes 6..).
    #[test]
    fn golden_bytes() {
        let golden: Vec<u8> = [
            &[0x00, 0x01][..],                                 // version 1
            &[0x3F, 0xAB, 0x0F, 0x63],                         // crc
            &[0x00, 0x00, 0x00, 0x01],                         // one entry
            &[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xE8], // producer id 1000
            &[0x00, 0x03],                                     // epoch 3
            &[0x00, 0x00, 0x00, 0x07],                         // last sequence 7
            &[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A], // last offset 42
            &[0x00, 0x00, 0x00, 0x02],                         // offset delta 2
            &[0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x7B], // timestamp 1700000000123
            &[0xFF, 0xFF, 0xFF, 0xFF],                         // coordinator epoch -1
            &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], // no open transaction
        ]
        .concat();
        let expected = entry(1000, 7, 42);
        assert_eq!(encode_producer_snapshot(&[expected]).unwrap(), golden);
        assert_eq!(decode_producer_snapshot(&golden).unwrap(), [expected]);
        assert_eq!((expected.first_sequence(), expected.first_offset()), (5, 40));
        assert!(expected.has_batch());
        // The empty snapshot: version, the CRC of a zero count, the count.
        let empty = [0x00, 0x01, 0x48, 0x67, 0x4B, 0xC7, 0x00, 0x00, 0x00, 0x00];
        assert_eq!(encode_producer_snapshot(&[]).unwrap(), empty);
        assert!(decode_producer_snapshot(&empty).unwrap().is_empty());
    }

    #[test]
    fn round_trip() {
        let entries = [
            entry(1, 0, 0),
            entry(i64::MAX, i32::MAX, i64::MAX),
            ProducerSnapshotEntry { last_offset: -1, offset_delta: 0, ..entry(7, -1, -1) },
            ProducerSnapshotEntry {
                coordinator_epoch: 9,
                current_txn_first_offset: 5,
                ..entry(8, 1, 6)
            },
        ];
        let bytes = encode_producer_snapshot(&entries).unwrap();
        assert_eq!(bytes.len(), PRODUCER_ENTRIES_OFFSET + 4 + 4 * PRODUCER_SNAPSHOT_ENTRY_BYTES);
        assert_eq!(decode_producer_snapshot(&bytes).unwrap(), entries);
        assert!(!entries[2].has_batch());
        // A sequence that wrapped inside the last batch.
        let wrapped = ProducerSnapshotEntry { last_sequence: 1, offset_delta: 3, ..entry(2, 0, 9) };
        assert_eq!(wrapped.first_sequence(), i32::MAX - 1);
    }

    #[test]
    fn corruption_is_a_typed_error_in_kafkas_order() {
        let good = encode_producer_snapshot(&[entry(5, 2, 10)]).unwrap();
        // A flipped bit in an entry: the CRC no longer matches.
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let error = decode_producer_snapshot(&flipped).unwrap_err();
        let DecodeError::CrcMismatch { stored, computed } = error else { panic!("{error}") };
        assert_eq!(stored.to_be_bytes(), good[2..6]);
        assert_ne!(stored, computed);
        // A wrong version is found before the CRC.
        let mut version = flipped.clone();
        version[1] = 2;
        assert_eq!(
            decode_producer_snapshot(&version).unwrap_err(),
            DecodeError::UnsupportedVersion { file: "producer snapshot", version: 2 }
        );
        // A truncated entry names the field it stopped in, inside `producer_entries`.
        let error = decode_producer_snapshot(&good[..good.len() - 3]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "error reading field 'producer_entries': error reading field \
             'current_txn_first_offset': truncated input: needed 8 bytes, only 5 available"
        );
        assert_eq!(
            decode_producer_snapshot(&good[..4]).unwrap_err().to_string(),
            "error reading field 'crc': truncated input: needed 4 bytes, only 2 available"
        );
        // Impossible counts are refused before anything is reserved.
        for (count, available) in [(-1, 0), (i32::MAX, 0)] {
            let mut bytes = good[..6].to_vec();
            bytes.extend_from_slice(&count.to_be_bytes());
            let error = decode_producer_snapshot(&bytes).unwrap_err();
            let DecodeError::SchemaField { field: "producer_entries", source } = error else {
                panic!("{error}")
            };
            assert_eq!(*source, DecodeError::ArraySize { size: count, available });
        }
        // A count Kafka's byte check lets through: the entries run out.
        let mut bytes = good[..6].to_vec();
        bytes.extend_from_slice(&30i32.to_be_bytes());
        bytes.extend_from_slice(&[0; 30]);
        let error = decode_producer_snapshot(&bytes).unwrap_err();
        assert!(error.to_string().contains("'timestamp'"), "{error}");
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let good = encode_producer_snapshot(&[entry(5, 2, 10), entry(6, 3, 12)]).unwrap();
        for len in 0..good.len() {
            let _ = decode_producer_snapshot(&good[..len]);
        }
        for byte_idx in 0..good.len() {
            let mut bytes = good.clone();
            bytes[byte_idx] ^= 0xFF;
            assert!(decode_producer_snapshot(&bytes).is_err(), "byte {byte_idx}");
        }
    }
}
