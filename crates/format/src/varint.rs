//! ZigZag varint and varlong codecs (Kafka's `ByteUtils`), and the bounds-checked big-endian field
//! reader that every decoder in this crate is built on.

use crate::error::{DecodeError, Result};

/// Largest encoded size of a varint.
pub const VARINT_BYTES_MAX: usize = 5;
/// Largest encoded size of a varlong.
pub const VARLONG_BYTES_MAX: usize = 10;

/// ZigZag-encodes a signed 32-bit value.
#[inline]
pub const fn zigzag32(value: i32) -> u32 {
    ((value << 1) ^ (value >> 31)) as u32
}

/// ZigZag-encodes a signed 64-bit value.
#[inline]
pub const fn zigzag64(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Number of bytes [`write_unsigned_varint`] uses for `value`.
#[inline]
pub const fn size_of_unsigned_varint(value: u32) -> usize {
    let leading_zeros = value.leading_zeros() as usize;
    ((38 - leading_zeros) / 7) + (leading_zeros / 32)
}

/// Number of bytes [`write_varint`] uses for `value`.
#[inline]
pub const fn size_of_varint(value: i32) -> usize {
    size_of_unsigned_varint(zigzag32(value))
}

/// Number of bytes [`write_varlong`] uses for `value`.
#[inline]
pub const fn size_of_varlong(value: i64) -> usize {
    let leading_zeros = zigzag64(value).leading_zeros() as usize;
    ((70 - leading_zeros) / 7) + (leading_zeros / 64)
}

/// Appends the unsigned LEB128 encoding of `value`.
#[inline]
pub fn write_unsigned_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends the ZigZag varint encoding of `value`.
#[inline]
pub fn write_varint(out: &mut Vec<u8>, value: i32) {
    write_unsigned_varint(out, zigzag32(value));
}

/// Appends the ZigZag varlong encoding of `value`.
#[inline]
pub fn write_varlong(out: &mut Vec<u8>, value: i64) {
    let mut raw = zigzag64(value);
    while raw >= 0x80 {
        out.push((raw as u8) | 0x80);
        raw >>= 7;
    }
    out.push(raw as u8);
}

/// A forward reader over a byte slice whose every read is bounds-checked.
///
/// Positions it reports are relative to the slice it was made from plus `origin`, so that a reader
/// over a record section can report positions inside the whole batch.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
    origin: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, position: 0, origin: 0 }
    }

    /// A reader whose reported positions are shifted by `origin`.
    pub fn with_origin(bytes: &'a [u8], origin: usize) -> Self {
        Self { bytes, position: 0, origin }
    }

    /// Bytes consumed so far.
    pub fn consumed(&self) -> usize {
        self.position
    }

    /// Position of the next byte, including the origin.
    pub fn position(&self) -> usize {
        self.origin + self.position
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    /// The unconsumed bytes.
    pub fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.position..).unwrap_or_default()
    }

    /// Consumes `len` bytes and returns them.
    #[inline]
    pub fn bytes(&mut self, len: usize) -> Result<&'a [u8]> {
        let end =
            self.position.checked_add(len).filter(|end| *end <= self.bytes.len()).ok_or_else(
                || DecodeError::Truncated { needed: len, available: self.remaining() },
            )?;
        let slice = self.bytes.get(self.position..end).unwrap_or_default();
        self.position = end;
        Ok(slice)
    }

    /// Consumes `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let slice = self.bytes(N)?;
        let mut array = [0u8; N];
        array.copy_from_slice(slice);
        Ok(array)
    }

    /// Reads a big-endian `i8`.
    #[inline]
    pub fn i8(&mut self) -> Result<i8> {
        Ok(i8::from_be_bytes(self.array()?))
    }

    /// Reads a big-endian `i16`.
    #[inline]
    pub fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    /// Reads a big-endian `i32`.
    #[inline]
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    /// Reads a big-endian `u32`.
    #[inline]
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// Reads a big-endian `i64`.
    #[inline]
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// Reads an unsigned LEB128 varint of at most five bytes.
    #[inline]
    pub fn unsigned_varint(&mut self) -> Result<u32> {
        // Most varints of a record (attributes aside: lengths, deltas, header counts) fit in
        // one byte.
        if let Some(&byte) = self.bytes.get(self.position)
            && byte & 0x80 == 0
        {
            self.position += 1;
            return Ok(u32::from(byte));
        }
        let at = self.position();
        let mut value: u32 = 0;
        for byte_idx in 0..VARINT_BYTES_MAX {
            let Some(&byte) = self.bytes.get(self.position) else {
                return Err(DecodeError::InvalidVarint { at });
            };
            self.position += 1;
            value |= u32::from(byte & 0x7f) << (7 * byte_idx);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::InvalidVarint { at })
    }

    /// Reads a ZigZag varint.
    #[inline]
    pub fn varint(&mut self) -> Result<i32> {
        let raw = self.unsigned_varint()?;
        Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
    }

    /// Reads a ZigZag varlong of at most ten bytes.
    #[inline]
    pub fn varlong(&mut self) -> Result<i64> {
        if let Some(&byte) = self.bytes.get(self.position)
            && byte & 0x80 == 0
        {
            self.position += 1;
            let raw = u64::from(byte);
            return Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64));
        }
        let at = self.position();
        let mut raw: u64 = 0;
        for byte_idx in 0..VARLONG_BYTES_MAX {
            let Some(&byte) = self.bytes.get(self.position) else {
                return Err(DecodeError::InvalidVarlong { at });
            };
            self.position += 1;
            raw |= u64::from(byte & 0x7f) << (7 * byte_idx);
            if byte & 0x80 == 0 {
                return Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64));
            }
        }
        Err(DecodeError::InvalidVarlong { at })
    }

    /// Reads a varint length and then that many bytes; a length of -1 means null.
    #[inline]
    pub fn nullable_varint_bytes(&mut self, what: &'static str) -> Result<Option<&'a [u8]>> {
        let at = self.position();
        let len = self.varint()?;
        match len {
            -1 => Ok(None),
            len if len < -1 => Err(DecodeError::InvalidRecord { at, reason: what }),
            len => self
                .bytes(len as usize)
                .map(Some)
                .map_err(|_| DecodeError::InvalidRecord { at, reason: what }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_varint(value: i32) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(&mut out, value);
        out
    }

    fn encode_varlong(value: i64) -> Vec<u8> {
        let mut out = Vec::new();
        write_varlong(&mut out, value);
        out
    }

    /// `ByteUtilsTest` vectors (spec §1.5): the same bytes for varint and varlong.
    const SIGNED_VECTORS: &[(i64, &[u8])] = &[
        (0, &[0x00]),
        (-1, &[0x01]),
        (1, &[0x02]),
        (63, &[0x7E]),
        (-64, &[0x7F]),
        (64, &[0x80, 0x01]),
        (-65, &[0x81, 0x01]),
        (8191, &[0xFE, 0x7F]),
        (-8192, &[0xFF, 0x7F]),
        (8192, &[0x80, 0x80, 0x01]),
        (-8193, &[0x81, 0x80, 0x01]),
        (1_048_575, &[0xFE, 0xFF, 0x7F]),
        (-1_048_576, &[0xFF, 0xFF, 0x7F]),
        (1_048_576, &[0x80, 0x80, 0x80, 0x01]),
        (-1_048_577, &[0x81, 0x80, 0x80, 0x01]),
        (134_217_727, &[0xFE, 0xFF, 0xFF, 0x7F]),
        (-134_217_728, &[0xFF, 0xFF, 0xFF, 0x7F]),
        (134_217_728, &[0x80, 0x80, 0x80, 0x80, 0x01]),
        (-134_217_729, &[0x81, 0x80, 0x80, 0x80, 0x01]),
        (i32::MAX as i64, &[0xFE, 0xFF, 0xFF, 0xFF, 0x0F]),
        (i32::MIN as i64, &[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
    ];

    #[test]
    fn byte_utils_signed_vectors() {
        for &(value, bytes) in SIGNED_VECTORS {
            let value32 = i32::try_from(value).unwrap();
            assert_eq!(encode_varint(value32), bytes, "varint {value}");
            assert_eq!(encode_varlong(value), bytes, "varlong {value}");
            assert_eq!(size_of_varint(value32), bytes.len(), "size_of_varint {value}");
            assert_eq!(size_of_varlong(value), bytes.len(), "size_of_varlong {value}");
            assert_eq!(Reader::new(bytes).varint().unwrap(), value32);
            assert_eq!(Reader::new(bytes).varlong().unwrap(), value);
        }
    }

    #[test]
    fn byte_utils_unsigned_vectors() {
        let vectors: &[(u32, &[u8])] = &[
            (0, &[0x00]),
            (u32::MAX, &[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
            (i32::MAX as u32, &[0xFF, 0xFF, 0xFF, 0xFF, 0x07]),
            (i32::MIN as u32, &[0x80, 0x80, 0x80, 0x80, 0x08]),
        ];
        for &(value, bytes) in vectors {
            let mut out = Vec::new();
            write_unsigned_varint(&mut out, value);
            assert_eq!(out, bytes);
            assert_eq!(size_of_unsigned_varint(value), bytes.len());
            assert_eq!(Reader::new(bytes).unsigned_varint().unwrap(), value);
        }
    }

    #[test]
    fn varint_with_fifth_byte_continuation_is_rejected() {
        let bytes = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
        assert_eq!(Reader::new(&bytes).varint(), Err(DecodeError::InvalidVarint { at: 0 }));
    }

    #[test]
    fn varlong_with_tenth_byte_continuation_is_rejected() {
        let bytes = [0xFF; 11];
        assert_eq!(Reader::new(&bytes).varlong(), Err(DecodeError::InvalidVarlong { at: 0 }));
    }

    #[test]
    fn varint_underflow_is_an_error_at_its_start() {
        let bytes = [0x80, 0x80];
        assert_eq!(
            Reader::with_origin(&bytes, 7).varint(),
            Err(DecodeError::InvalidVarint { at: 7 })
        );
    }

    #[test]
    fn every_size_boundary_round_trips() {
        // Each power of two and its neighbours, both signs: the exhaustive set of size changes.
        for shift in 0..63 {
            let base = 1i64 << shift;
            for value in [base - 1, base, base + 1, -base - 1, -base, -base + 1] {
                let bytes = encode_varlong(value);
                assert_eq!(bytes.len(), size_of_varlong(value));
                assert_eq!(Reader::new(&bytes).varlong().unwrap(), value);
                if let Ok(value32) = i32::try_from(value) {
                    let bytes = encode_varint(value32);
                    assert_eq!(bytes.len(), size_of_varint(value32));
                    assert_eq!(Reader::new(&bytes).varint().unwrap(), value32);
                }
            }
        }
        for value in [i64::MAX, i64::MIN] {
            assert_eq!(Reader::new(&encode_varlong(value)).varlong().unwrap(), value);
        }
    }
}
