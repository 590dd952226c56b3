//! Entries of the sparse offset index (`.index`, spec §4.1) and the time index (`.timeindex`,
//! spec §5.1). Both are fixed-size big-endian records with no file header.
//!
//! ```text
//! .index entry (8 bytes)       .timeindex entry (12 bytes)
//!   0  4  relativeOffset int32    0  8  timestamp      int64
//!   4  4  position       int32    8  4  relativeOffset int32
//! ```

use crate::error::{DecodeError, Result};

/// Bytes of one offset index entry.
pub const OFFSET_INDEX_ENTRY_BYTES: usize = 8;
/// Bytes of one time index entry.
pub const TIME_INDEX_ENTRY_BYTES: usize = 12;

/// One `.index` entry: the batch starting at `position` has (last, or before Kafka 2.0 first)
/// offset `base_offset + relative_offset` (Kafka's `OffsetPosition`, relative form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OffsetIndexEntry {
    /// Offset minus the segment's base offset.
    pub relative_offset: u32,
    /// Byte position of the batch in the `.log`.
    pub position: u32,
}

impl OffsetIndexEntry {
    /// Encodes the entry.
    pub fn encode(&self) -> [u8; OFFSET_INDEX_ENTRY_BYTES] {
        let mut bytes = [0u8; OFFSET_INDEX_ENTRY_BYTES];
        let (offset, position) = bytes.split_at_mut(4);
        offset.copy_from_slice(&self.relative_offset.to_be_bytes());
        position.copy_from_slice(&self.position.to_be_bytes());
        bytes
    }

    /// Decodes an entry from exactly eight bytes. Relative offsets and positions above
    /// `i32::MAX` are corruption (Kafka reads them as negative ints).
    pub fn decode(bytes: &[u8; OFFSET_INDEX_ENTRY_BYTES]) -> Result<Self> {
        let (offset, position) = bytes.split_at(4);
        let relative_offset = u32::from_be_bytes(offset.try_into().unwrap_or_default());
        let position = u32::from_be_bytes(position.try_into().unwrap_or_default());
        if relative_offset > i32::MAX as u32 || position > i32::MAX as u32 {
            return Err(DecodeError::InvalidRecord {
                at: 0,
                reason: "index entry holds a negative relative offset or position",
            });
        }
        Ok(Self { relative_offset, position })
    }

    /// Decodes the entry at `entry_idx` of an index file's bytes.
    pub fn read(file: &[u8], entry_idx: usize) -> Result<Self> {
        // Saturating: an index past the end of any file is truncation, not overflow.
        let at = entry_idx.saturating_mul(OFFSET_INDEX_ENTRY_BYTES);
        let end = at.saturating_add(OFFSET_INDEX_ENTRY_BYTES);
        let bytes = file
            .get(at..end)
            .and_then(|slice| <&[u8; OFFSET_INDEX_ENTRY_BYTES]>::try_from(slice).ok())
            .ok_or(DecodeError::Truncated { needed: end, available: file.len() })?;
        Self::decode(bytes).map_err(|error| error.at(at as u64))
    }
}

/// One `.timeindex` entry: every record after `base_offset + relative_offset` has a timestamp
/// greater than `timestamp` (Kafka's `TimestampOffset`, relative form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeIndexEntry {
    /// The largest timestamp up to the offset.
    pub timestamp: i64,
    /// Offset minus the segment's base offset.
    pub relative_offset: u32,
}

impl TimeIndexEntry {
    /// Encodes the entry.
    pub fn encode(&self) -> [u8; TIME_INDEX_ENTRY_BYTES] {
        let mut bytes = [0u8; TIME_INDEX_ENTRY_BYTES];
        let (timestamp, offset) = bytes.split_at_mut(8);
        timestamp.copy_from_slice(&self.timestamp.to_be_bytes());
        offset.copy_from_slice(&self.relative_offset.to_be_bytes());
        bytes
    }

    /// Decodes an entry from exactly twelve bytes.
    pub fn decode(bytes: &[u8; TIME_INDEX_ENTRY_BYTES]) -> Result<Self> {
        let (timestamp, offset) = bytes.split_at(8);
        let timestamp = i64::from_be_bytes(timestamp.try_into().unwrap_or_default());
        let relative_offset = u32::from_be_bytes(offset.try_into().unwrap_or_default());
        if relative_offset > i32::MAX as u32 {
            return Err(DecodeError::InvalidRecord {
                at: 8,
                reason: "time index entry holds a negative relative offset",
            });
        }
        Ok(Self { timestamp, relative_offset })
    }

    /// Decodes the entry at `entry_idx` of a time index file's bytes.
    pub fn read(file: &[u8], entry_idx: usize) -> Result<Self> {
        // Saturating: an index past the end of any file is truncation, not overflow.
        let at = entry_idx.saturating_mul(TIME_INDEX_ENTRY_BYTES);
        let end = at.saturating_add(TIME_INDEX_ENTRY_BYTES);
        let bytes = file
            .get(at..end)
            .and_then(|slice| <&[u8; TIME_INDEX_ENTRY_BYTES]>::try_from(slice).ok())
            .ok_or(DecodeError::Truncated { needed: end, available: file.len() })?;
        Self::decode(bytes).map_err(|error| error.at(at as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_entry_bytes_are_big_endian() {
        let entry = OffsetIndexEntry { relative_offset: 0x0102_0304, position: 0x0A0B_0C0D };
        let bytes = entry.encode();
        assert_eq!(bytes, [1, 2, 3, 4, 0x0A, 0x0B, 0x0C, 0x0D]);
        assert_eq!(OffsetIndexEntry::decode(&bytes).unwrap(), entry);
        assert!(OffsetIndexEntry::decode(&[0x80, 0, 0, 0, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn time_entry_bytes_are_big_endian() {
        let entry = TimeIndexEntry { timestamp: 1_700_000_000_000, relative_offset: 7 };
        let bytes = entry.encode();
        assert_eq!(bytes, [0, 0, 1, 0x8B, 0xCF, 0xE5, 0x68, 0, 0, 0, 0, 7]);
        assert_eq!(TimeIndexEntry::decode(&bytes).unwrap(), entry);
    }

    #[test]
    fn read_past_the_end_is_truncated() {
        let file = [0u8; 20];
        assert!(OffsetIndexEntry::read(&file, 1).is_ok());
        assert_eq!(
            OffsetIndexEntry::read(&file, 2),
            Err(DecodeError::Truncated { needed: 24, available: 20 })
        );
        assert!(TimeIndexEntry::read(&file, 0).is_ok());
        assert!(TimeIndexEntry::read(&file, 1).is_err());
    }

    /// Found by the `small_codecs` fuzz target: `entry_idx * 8` overflowed. The minimised input
    /// was the single byte 0x30, which the target reads as the entry index 0x3000_0000_0000_0000.
    #[test]
    fn huge_entry_index_is_truncated_not_overflow() {
        let file = [0x30u8];
        let entry_idx = u64::from_be_bytes([0x30, 0, 0, 0, 0, 0, 0, 0]) as usize;
        let truncated = DecodeError::Truncated { needed: usize::MAX, available: 1 };
        assert_eq!(OffsetIndexEntry::read(&file, entry_idx), Err(truncated.clone()));
        assert_eq!(TimeIndexEntry::read(&file, entry_idx), Err(truncated));
        let file = [0u8; 24];
        for entry_idx in [usize::MAX, usize::MAX / 8, usize::MAX / 12 + 1] {
            assert!(OffsetIndexEntry::read(&file, entry_idx).is_err());
            assert!(TimeIndexEntry::read(&file, entry_idx).is_err());
        }
    }
}

/// Bytes of one transaction index entry.
pub const ABORTED_TXN_BYTES: usize = 34;

/// One `.txnindex` entry: an aborted transaction whose ABORT marker is in this segment (Kafka's
/// `AbortedTxn`).
///
/// ```text
///  0  2  version           int16 (0)
///  2  8  producerId        int64
/// 10  8  firstOffset       int64  first offset of the transaction (may be in an earlier segment)
/// 18  8  lastOffset        int64  offset of the ABORT marker
/// 26  8  lastStableOffset  int64  the LSO when the abort was written
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AbortedTxn {
    /// The transactional producer.
    pub producer_id: i64,
    /// The transaction's first offset.
    pub first_offset: i64,
    /// The ABORT marker's offset.
    pub last_offset: i64,
    /// The last stable offset when the marker was written.
    pub last_stable_offset: i64,
}

/// The version of [`AbortedTxn`] entries this crate writes and reads.
pub const ABORTED_TXN_VERSION: i16 = 0;

impl AbortedTxn {
    /// Encodes the entry (version 0).
    pub fn encode(&self) -> [u8; ABORTED_TXN_BYTES] {
        let mut bytes = [0u8; ABORTED_TXN_BYTES];
        let fields =
            [self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset];
        for (slot, value) in bytes.get_mut(2..).unwrap_or_default().chunks_exact_mut(8).zip(fields)
        {
            slot.copy_from_slice(&value.to_be_bytes());
        }
        bytes
    }

    /// Decodes an entry; a version above 0 is an error, as in Kafka (which reads the first byte).
    pub fn decode(bytes: &[u8; ABORTED_TXN_BYTES]) -> Result<Self> {
        let (version, rest) = bytes.split_at(2);
        if version.first().copied().unwrap_or(0) != 0 {
            return Err(DecodeError::InvalidRecord {
                at: 0,
                reason: "unknown aborted txn version",
            });
        }
        let mut fields = rest
            .chunks_exact(8)
            .map(|chunk| i64::from_be_bytes(chunk.try_into().unwrap_or_default()));
        let mut next = || fields.next().unwrap_or_default();
        Ok(Self {
            producer_id: next(),
            first_offset: next(),
            last_offset: next(),
            last_stable_offset: next(),
        })
    }
}

#[cfg(test)]
mod aborted_txn_tests {
    use super::*;

    /// `testAbortedTxnSerde`.
    #[test]
    fn serde_round_trips_and_rejects_later_versions() {
        let txn = AbortedTxn {
            producer_id: 983_493,
            first_offset: 137,
            last_offset: 299,
            last_stable_offset: 200,
        };
        let mut bytes = txn.encode();
        assert_eq!(&bytes[..2], &[0, 0]);
        assert_eq!(&bytes[2..10], &983_493i64.to_be_bytes());
        assert_eq!(AbortedTxn::decode(&bytes).unwrap(), txn);
        bytes[0] = 1;
        assert!(AbortedTxn::decode(&bytes).is_err());
    }
}
