//! SplitMix64's constants and finalizer, shared by the ids `LogManager` makes (topic ids, the
//! directory id), the remote segment ids of `seglog-remote` and, with feature `sim`, by
//! `testing::Rng`.

/// The increment of SplitMix64's state: 2^64 divided by the golden ratio, odd.
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: a bijection of `u64` that spreads every input bit.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
