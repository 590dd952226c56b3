//! Compression of record sections (spec §1.6): none, gzip, snappy (xerial framing on write, xerial
//! or raw on read), LZ4 frames, and zstd. Every decompression is bounded.

use std::io::{Read, Write};

use crate::error::{DecodeError, Result};

/// The codec named by bits 0-2 of a batch's attributes (Kafka's `CompressionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Compression {
    /// Records stored as they are.
    None = 0,
    /// An RFC 1952 gzip member.
    Gzip = 1,
    /// Snappy, in the xerial snappy-java stream framing.
    Snappy = 2,
    /// The LZ4 frame format.
    Lz4 = 3,
    /// A Zstandard frame (magic 2 only).
    Zstd = 4,
}

impl Compression {
    /// Every codec, in id order.
    pub const ALL: [Self; 5] = [Self::None, Self::Gzip, Self::Snappy, Self::Lz4, Self::Zstd];

    /// The codec with Kafka id `id` (the low three bits of the attributes).
    pub fn from_id(id: u8) -> Result<Self> {
        match id {
            0 => Ok(Self::None),
            1 => Ok(Self::Gzip),
            2 => Ok(Self::Snappy),
            3 => Ok(Self::Lz4),
            4 => Ok(Self::Zstd),
            other => Err(DecodeError::UnknownCompression(other)),
        }
    }

    /// Kafka's id for this codec.
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// Kafka's name for this codec, as `CompressionType.name` and DumpLogSegments print it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }

    /// Parses Kafka's codec name (`none`, `gzip`, `snappy`, `lz4`, `zstd`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|codec| codec.name() == name)
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Bounds applied while decoding untrusted bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// The most bytes that one compressed payload may inflate to.
    pub decompressed_bytes_max: usize,
}

/// Kafka's largest batch by default is 1 MiB; a compressed one rarely inflates more than 64 times.
pub const DECOMPRESSED_BYTES_MAX_DEFAULT: usize = 64 * 1024 * 1024;

impl Default for DecodeLimits {
    fn default() -> Self {
        Self { decompressed_bytes_max: DECOMPRESSED_BYTES_MAX_DEFAULT }
    }
}

/// The 8-byte magic that opens a xerial snappy-java stream.
pub const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// The full 16-byte xerial header: magic, version 1, minimum compatible version 1.
pub const XERIAL_HEADER: [u8; 16] =
    [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1];
/// xerial's default block size: each chunk encodes at most this much input.
pub const XERIAL_BLOCK_BYTES: usize = 32 * 1024;

/// The LZ4 frame magic number, little-endian on disk.
const LZ4_FRAME_MAGIC: [u8; 4] = [0x04, 0x22, 0x4D, 0x18];

/// Compresses `input` with `codec` into a payload Kafka's readers accept (for magic 1 and 2).
pub fn compress(codec: Compression, input: &[u8]) -> Result<Vec<u8>> {
    let io = |codec: Compression| {
        move |error: std::io::Error| DecodeError::Decompression {
            codec: codec.name(),
            message: error.to_string(),
        }
    };
    match codec {
        Compression::None => Ok(input.to_vec()),
        Compression::Gzip => {
            let mut encoder = flate2::GzBuilder::new()
                .operating_system(0)
                .write(Vec::with_capacity(input.len() / 2 + 64), flate2::Compression::default());
            encoder.write_all(input).map_err(io(codec))?;
            encoder.finish().map_err(io(codec))
        }
        Compression::Snappy => {
            let mut out = Vec::with_capacity(XERIAL_HEADER.len() + input.len() / 2 + 64);
            out.extend_from_slice(&XERIAL_HEADER);
            let mut encoder = snap::raw::Encoder::new();
            for chunk in input.chunks(XERIAL_BLOCK_BYTES) {
                let compressed = encoder.compress_vec(chunk).map_err(|error| {
                    DecodeError::Decompression { codec: "snappy", message: error.to_string() }
                })?;
                out.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
                out.extend_from_slice(&compressed);
            }
            Ok(out)
        }
        Compression::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(
                info,
                Vec::with_capacity(input.len() / 2 + 64),
            );
            encoder.write_all(input).map_err(io(codec))?;
            encoder.finish().map_err(|error| DecodeError::Decompression {
                codec: "lz4",
                message: error.to_string(),
            })
        }
        Compression::Zstd => zstd::bulk::compress(input, 3).map_err(io(codec)),
    }
}

/// Decompresses a payload written by any Kafka producer or broker, refusing to produce more than
/// `limits.decompressed_bytes_max` bytes.
pub fn decompress(codec: Compression, payload: &[u8], limits: DecodeLimits) -> Result<Vec<u8>> {
    decompress_magic(codec, payload, limits, 2)
}

/// As [`decompress`], for a payload inside an entry of magic `magic` (magic 0 LZ4 payloads carry
/// Kafka's historical wrong frame header checksum, which is accepted).
pub fn decompress_magic(
    codec: Compression,
    payload: &[u8],
    limits: DecodeLimits,
    magic: i8,
) -> Result<Vec<u8>> {
    let limit_bytes = limits.decompressed_bytes_max;
    match codec {
        Compression::None => {
            if payload.len() > limit_bytes {
                return Err(DecodeError::DecompressedTooLarge { codec: "none", limit_bytes });
            }
            Ok(payload.to_vec())
        }
        Compression::Gzip => read_bounded("gzip", flate2::read::GzDecoder::new(payload), limits),
        Compression::Snappy => decompress_snappy(payload, limits),
        Compression::Lz4 => {
            if magic == 0 {
                let fixed = fix_lz4_header_checksum(payload)?;
                read_bounded("lz4", lz4_flex::frame::FrameDecoder::new(fixed.as_slice()), limits)
            } else {
                read_bounded("lz4", lz4_flex::frame::FrameDecoder::new(payload), limits)
            }
        }
        Compression::Zstd => {
            let decoder = zstd::stream::read::Decoder::with_buffer(payload).map_err(|error| {
                DecodeError::Decompression { codec: "zstd", message: error.to_string() }
            })?;
            read_bounded("zstd", decoder, limits)
        }
    }
}

/// Reads `reader` to its end, failing once more than the limit has come out.
fn read_bounded(codec: &'static str, reader: impl Read, limits: DecodeLimits) -> Result<Vec<u8>> {
    let limit_bytes = limits.decompressed_bytes_max;
    let mut out = Vec::new();
    let cap = u64::try_from(limit_bytes).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|error| DecodeError::Decompression { codec, message: error.to_string() })?;
    if out.len() > limit_bytes {
        return Err(DecodeError::DecompressedTooLarge { codec, limit_bytes });
    }
    Ok(out)
}

/// Snappy as Kafka's reader takes it: a xerial stream (with repeated headers tolerated between
/// chunks), or else the whole payload as one raw block, as librdkafka writes.
fn decompress_snappy(payload: &[u8], limits: DecodeLimits) -> Result<Vec<u8>> {
    let limit_bytes = limits.decompressed_bytes_max;
    let error = |message: String| DecodeError::Decompression { codec: "snappy", message };
    let mut decoder = snap::raw::Decoder::new();
    if !payload.starts_with(&XERIAL_MAGIC) {
        let len = snap::raw::decompress_len(payload).map_err(|e| error(e.to_string()))?;
        if len > limit_bytes {
            return Err(DecodeError::DecompressedTooLarge { codec: "snappy", limit_bytes });
        }
        return decoder.decompress_vec(payload).map_err(|e| error(e.to_string()));
    }
    let mut out = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        if rest.starts_with(&XERIAL_MAGIC) {
            rest = rest
                .get(XERIAL_HEADER.len()..)
                .ok_or_else(|| error(format!("xerial header truncated: {} bytes", rest.len())))?;
            continue;
        }
        let (len_bytes, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| error(format!("xerial chunk length truncated: {} bytes", rest.len())))?;
        let chunk_len = u32::from_be_bytes(*len_bytes) as usize;
        let chunk = tail.get(..chunk_len).ok_or_else(|| {
            error(format!("xerial chunk of {chunk_len} bytes exceeds the {} left", tail.len()))
        })?;
        let inflated_len = snap::raw::decompress_len(chunk).map_err(|e| error(e.to_string()))?;
        if out.len().saturating_add(inflated_len) > limit_bytes {
            return Err(DecodeError::DecompressedTooLarge { codec: "snappy", limit_bytes });
        }
        let start = out.len();
        out.resize(start + inflated_len, 0);
        let written = decoder
            .decompress(chunk, out.get_mut(start..).unwrap_or_default())
            .map_err(|e| error(e.to_string()))?;
        out.truncate(start + written);
        rest = tail.get(chunk_len..).unwrap_or_default();
    }
    Ok(out)
}

/// Kafka computes the LZ4 frame header checksum of magic 0 wrappers over the magic number too and
/// does not verify it on read (spec §1.6). This rewrites the byte to the correct checksum so that
/// a standard frame decoder accepts the payload.
fn fix_lz4_header_checksum(payload: &[u8]) -> Result<Vec<u8>> {
    let error =
        |message: &str| DecodeError::Decompression { codec: "lz4", message: message.into() };
    if !payload.starts_with(&LZ4_FRAME_MAGIC) {
        return Err(error("not an LZ4 frame: bad magic number"));
    }
    let flg = *payload.get(4).ok_or_else(|| error("frame descriptor truncated"))?;
    // FLG, BD, then an 8-byte content size when FLG bit 3 is set, then the checksum byte.
    let descriptor_len = if flg & 0x08 != 0 { 10 } else { 2 };
    let checksum_at = 4 + descriptor_len;
    let descriptor =
        payload.get(4..checksum_at).ok_or_else(|| error("frame descriptor truncated"))?;
    let checksum = (twox_hash::XxHash32::oneshot(0, descriptor) >> 8) as u8;
    let mut fixed = payload.to_vec();
    let slot = fixed.get_mut(checksum_at).ok_or_else(|| error("frame descriptor truncated"))?;
    *slot = checksum;
    Ok(fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8 ^ (i / 300) as u8).collect()
    }

    #[test]
    fn every_codec_round_trips() {
        for codec in Compression::ALL {
            for len in [0, 1, 100, 70_000, 200_000] {
                let input = sample(len);
                let compressed = compress(codec, &input).unwrap();
                let output = decompress(codec, &compressed, DecodeLimits::default()).unwrap();
                assert_eq!(output, input, "{codec} {len}");
            }
        }
    }

    #[test]
    fn lz4_header_is_kafkas() {
        let compressed = compress(Compression::Lz4, b"hello").unwrap();
        assert_eq!(compressed.get(..7).unwrap(), &[0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82]);
    }

    #[test]
    fn magic0_lz4_broken_header_checksum_is_accepted() {
        let mut compressed = compress(Compression::Lz4, b"hello hello hello").unwrap();
        // Kafka's magic 0 writer puts 0x1A here (spec §1.6).
        compressed[6] = 0x1A;
        assert!(decompress(Compression::Lz4, &compressed, DecodeLimits::default()).is_err());
        let output =
            decompress_magic(Compression::Lz4, &compressed, DecodeLimits::default(), 0).unwrap();
        assert_eq!(output, b"hello hello hello");
    }

    #[test]
    fn snappy_writes_xerial_and_reads_raw_and_concatenated_streams() {
        let input = sample(100_000);
        let framed = compress(Compression::Snappy, &input).unwrap();
        assert_eq!(framed.get(..16).unwrap(), &XERIAL_HEADER);
        let raw = snap::raw::Encoder::new().compress_vec(&input).unwrap();
        assert_eq!(decompress(Compression::Snappy, &raw, DecodeLimits::default()).unwrap(), input);
        let mut twice = framed.clone();
        twice.extend_from_slice(&framed);
        let mut expected = input.clone();
        expected.extend_from_slice(&input);
        assert_eq!(
            decompress(Compression::Snappy, &twice, DecodeLimits::default()).unwrap(),
            expected
        );
    }

    #[test]
    fn decompression_is_bounded_for_every_codec() {
        let input = vec![0u8; 1 << 20];
        let limits = DecodeLimits { decompressed_bytes_max: 1000 };
        for codec in Compression::ALL {
            let compressed = compress(codec, &input).unwrap();
            let error = decompress(codec, &compressed, limits).unwrap_err();
            assert_eq!(
                error,
                DecodeError::DecompressedTooLarge { codec: codec.name(), limit_bytes: 1000 },
                "{codec}"
            );
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            // `[0x05]` claims five raw snappy bytes and has none; the xerial case has a chunk
            // length far past the end.
            for garbage in [&b"\x05"[..], b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\xff"] {
                let result = decompress(codec, garbage, DecodeLimits::default());
                assert!(result.is_err(), "{codec} {garbage:?} gave {result:?}");
            }
        }
    }

    #[test]
    fn unknown_codec_ids_are_rejected() {
        for id in 5..8 {
            assert_eq!(Compression::from_id(id), Err(DecodeError::UnknownCompression(id)));
        }
    }
}
