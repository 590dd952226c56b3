//! The Java and Kafka helpers whose exact results end up in Kafka's bytes and texts: Java's
//! `String.hashCode`, Kafka's `Utils.murmur2` and `Utils.toPositive` (the default partitioner),
//! and Kafka's `Uuid` text form (base64url without padding).
//!
//! Each is written once here and used by the broker (group partitioning), the storage
//! (`meta.properties`, `partition.metadata`) and the cli (the partitioner of `produce`, `dump`).

/// The length of a Kafka `Uuid` in its text form.
pub const UUID_CHARS: usize = 22;

/// The base64url alphabet (RFC 4648 section 5), which Kafka's `Uuid.toString` uses.
pub const BASE64_URL_SAFE: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The standard base64 alphabet (RFC 4648 section 4), Jackson's default for binary values.
pub const BASE64_STANDARD: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Java's `String.hashCode`, over UTF-16 code units.
pub fn string_hash(text: &str) -> i32 {
    text.encode_utf16().fold(0i32, |hash, unit| hash.wrapping_mul(31).wrapping_add(i32::from(unit)))
}

/// Kafka's `Utils.murmur2`, which its default partitioner hashes keys with.
#[expect(
    clippy::little_endian_bytes,
    reason = "murmur2 reads its input little-endian, as Kafka's Utils.murmur2 does"
)]
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    // Kafka takes `data.length` as an int; only its low 32 bits take part.
    #[expect(clippy::cast_possible_truncation, reason = "Java's int length, as Kafka hashes it")]
    let mut h: u32 = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for chunk in chunks.by_ref() {
        let mut k = u32::from_le_bytes(chunk.try_into().unwrap_or_default());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if let Some(third) = tail.get(2) {
        h ^= u32::from(*third) << 16;
    }
    if let Some(second) = tail.get(1) {
        h ^= u32::from(*second) << 8;
    }
    if let Some(first) = tail.first() {
        h ^= u32::from(*first);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    i32::from_be_bytes(h.to_be_bytes())
}

/// Kafka's `Utils.toPositive`: the sign bit cleared (not `abs`, so `i32::MIN` gives 0).
pub const fn to_positive(number: i32) -> i32 {
    number & 0x7fff_ffff
}

/// Base64 of `bytes` in `alphabet`, padded with `=` when `pad` (Jackson's binary values) or not
/// (Kafka's `Uuid`).
pub fn base64(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte_at = |idx: usize| u32::from(chunk.get(idx).copied().unwrap_or(0));
        let bits = (byte_at(0) << 16) | (byte_at(1) << 8) | byte_at(2);
        // A 3-byte chunk gives four characters, a 2-byte one three, a 1-byte one two.
        let n_chars = chunk.len() + 1;
        for char_idx in 0..4 {
            if char_idx < n_chars {
                let sextet = (bits >> (18 - 6 * char_idx)) & 0x3f;
                let symbol = alphabet.get(sextet as usize).copied().unwrap_or(b'=');
                text.push(char::from(symbol));
            } else if pad {
                text.push('=');
            }
        }
    }
    text
}

/// Writes a Kafka `Uuid` (16 bytes: the most significant long, then the least, big-endian) as
/// Kafka's `Uuid.toString` does: base64url without padding, 22 characters.
pub fn uuid_to_base64(uuid: &[u8; 16]) -> String {
    let text = base64(uuid, BASE64_URL_SAFE, false);
    assert_eq!(text.len(), UUID_CHARS);
    text
}

/// Reads a Kafka `Uuid` from its text form: exactly 22 base64url characters, no padding, and
/// the unused low 4 bits of the last character zero (so every accepted text is the one
/// [`uuid_to_base64`] writes). The error says what is wrong.
pub fn uuid_from_base64(text: &str) -> Result<[u8; 16], String> {
    if text.len() != UUID_CHARS {
        return Err(format!("{text:?} is not {UUID_CHARS} base64url characters"));
    }
    let mut bits: u128 = 0;
    for (char_idx, byte) in text.bytes().enumerate() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return Err(format!("{text:?} has a character outside base64url")),
        };
        let value = u128::from(value);
        if char_idx + 1 < UUID_CHARS {
            bits = bits << 6 | value;
        } else {
            // 22 characters carry 132 bits: the last one's low 4 bits are padding, zero in the
            // canonical form.
            if value & 0xf != 0 {
                return Err(format!("{text:?} is not a canonical Uuid (padding bits set)"));
            }
            bits = bits << 2 | value >> 4;
        }
    }
    Ok(bits.to_be_bytes())
}

/// Java's `Double.toString` (what Jackson prints for a `DoubleNode`): the shortest digits that
/// read back to the same double, as a decimal with at least one fractional digit between
/// 10^-3 and 10^7, else as `d.dddE<n>`; `NaN`, `Infinity`, `-0.0`.
pub fn java_double_to_string(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    if (1e-3..1e7).contains(&value.abs()) {
        let text = format!("{value}");
        return if text.contains('.') { text } else { text + ".0" };
    }
    let text = format!("{value:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exponent}")
    } else {
        format!("{mantissa}.0E{exponent}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_to_string_matches_java() {
        // Values of `Double.toString` in Java.
        for (value, java) in [
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (0.001, "0.001"),
            (0.000_1, "1.0E-4"),
            (1_000_000.0, "1000000.0"),
            (10_000_000.0, "1.0E7"),
            (1.234_5e10, "1.2345E10"),
            (1024.0 * 1024.0 * 100.0, "1.048576E8"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (-0.0, "-0.0"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(java_double_to_string(value), java, "{value:?}");
        }
    }

    #[test]
    fn string_hash_matches_java() {
        // Values of `String.hashCode` in Java.
        assert_eq!(string_hash(""), 0);
        assert_eq!(string_hash("abc"), 96_354);
        assert_eq!(string_hash("hello"), 99_162_322);
        assert_eq!(string_hash("polygenelubricants"), i32::MIN);
    }

    /// Kafka's `UtilsTest.testMurmur2` vectors.
    #[test]
    fn murmur2_matches_kafka() {
        let cases: [(&[u8], i32); 5] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
        ];
        for (input, expected) in cases {
            assert_eq!(murmur2(input), expected, "{}", String::from_utf8_lossy(input));
        }
        assert_eq!(to_positive(i32::MIN), 0);
        assert_eq!(to_positive(-1), i32::MAX);
        assert_eq!(to_positive(5), 5);
    }

    #[test]
    fn base64_alphabets_and_padding() {
        assert_eq!(base64(b"", BASE64_STANDARD, true), "");
        assert_eq!(base64(b"f", BASE64_STANDARD, true), "Zg==");
        assert_eq!(base64(b"fo", BASE64_STANDARD, true), "Zm8=");
        assert_eq!(base64(b"foo", BASE64_STANDARD, true), "Zm9v");
        assert_eq!(base64(&[0xfb, 0xff], BASE64_STANDARD, true), "+/8=");
        assert_eq!(base64(&[0xfb, 0xff], BASE64_URL_SAFE, false), "-_8");
    }

    #[test]
    fn uuid_text_round_trips_with_kafkas_examples() {
        let one = 1u128.to_be_bytes();
        assert_eq!(uuid_to_base64(&one), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(uuid_from_base64("AAAAAAAAAAAAAAAAAAAAAQ").unwrap(), one);
        assert_eq!(uuid_to_base64(&[0; 16]), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(uuid_to_base64(&[0xff; 16]), "_____________________w");
        let bytes: [u8; 16] =
            std::array::from_fn(|idx| u8::try_from(idx).unwrap().wrapping_mul(37));
        assert_eq!(uuid_from_base64(&uuid_to_base64(&bytes)).unwrap(), bytes);
        assert!(uuid_from_base64("AAAAAAAAAAAAAAAAAAAAAR").is_err());
        assert!(uuid_from_base64("AAAAAAAAAAAAAAAAAAAAA=").is_err());
    }
}
