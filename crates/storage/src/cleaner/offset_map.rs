//! The cleaner's key-to-last-offset map (Kafka's `SkimpyOffsetMap`): an open-addressing table in
//! one byte buffer of at most `log.cleaner.dedupe.buffer.size / log.cleaner.threads`.
//!
//! Kafka allocates the whole buffer up front. Here the buffer starts small
//! ([`INITIAL_BYTES_MAX`]) and doubles (re-placing every key) when it is half full, up to the
//! configured size, and [`SkimpyOffsetMap::clear`] gives a grown buffer back: a broker whose
//! compacted topics take a few thousand keys per round (`__consumer_offsets`) holds kilobytes,
//! not 128 MiB that a zeroing pass would commit page by page (measured by the soak as RSS
//! climbing in steps). The capacity a round may fill, and so what a round cleans, is Kafka's:
//! it depends on the configured size only.
//!
//! A slot is the key's MD5 digest (16 bytes) followed by the offset (8 bytes, big-endian): 24
//! bytes, as in Kafka, so a buffer holds as many keys here as it does there. A slot whose 24
//! bytes are all zero is empty. The probe sequence is Kafka's: successive 4-byte windows of the
//! digest, then linear steps past its end. Two keys with one digest share a slot, as in Kafka
//! (the chance is 2^-128 per pair).

use md5::{Digest, Md5};

/// Bytes of a key digest.
const HASH_BYTES: usize = 16;
/// Bytes of one slot: the digest and an 8-byte offset.
pub const SLOT_BYTES: usize = HASH_BYTES + 8;
/// The buffer a map starts with, at most (about 2,700 slots).
pub(crate) const INITIAL_BYTES_MAX: usize = 64 * 1024;

/// The map from key digests to the last offset seen for each key (Kafka's `SkimpyOffsetMap`).
#[derive(Debug)]
pub struct SkimpyOffsetMap {
    bytes: Vec<u8>,
    /// Slots of the buffer now.
    buffer_slots: usize,
    /// Slots of the configured buffer: the most it grows to.
    slots_max: usize,
    entries: usize,
    /// The last offset the map covers: every keyed record at or below it has been put.
    latest_offset: i64,
    lookups: u64,
    probes: u64,
}

impl SkimpyOffsetMap {
    /// A map in `memory_bytes` of buffer (at least one slot's worth).
    pub fn new(memory_bytes: usize) -> Self {
        let slots_max = (memory_bytes / SLOT_BYTES).max(1);
        let slots = Self::initial_slots(slots_max);
        Self {
            bytes: vec![0; slots * SLOT_BYTES],
            buffer_slots: slots,
            slots_max,
            entries: 0,
            latest_offset: -1,
            lookups: 0,
            probes: 0,
        }
    }

    fn initial_slots(slots_max: usize) -> usize {
        slots_max.min(INITIAL_BYTES_MAX / SLOT_BYTES)
    }

    /// How many slots the configured buffer has (the map's capacity; the buffer in use may be
    /// smaller until it needs them).
    pub fn slots(&self) -> usize {
        self.slots_max
    }

    /// Bytes of the buffer in use now.
    pub fn buffer_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// How many keys are in the map.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The share of slots in use, 0 to 1 (Kafka's `utilization`, the buffer-utilization metric).
    pub fn utilization(&self) -> f64 {
        self.entries as f64 / self.slots_max as f64
    }

    /// The last offset the map covers, or -1 when it covers nothing yet.
    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    /// Moves the covered range's end to `offset` (Kafka's `updateLatestOffset`).
    pub fn update_latest_offset(&mut self, offset: i64) {
        self.latest_offset = offset;
    }

    /// The average probes per lookup so far (Kafka's `collisionRate` is `probes / lookups`).
    pub fn probes_per_lookup(&self) -> f64 {
        if self.lookups == 0 { 0.0 } else { self.probes as f64 / self.lookups as f64 }
    }

    /// Empties the map for the next round; a grown buffer is given back.
    pub fn clear(&mut self) {
        let initial = Self::initial_slots(self.slots_max);
        if self.buffer_slots > initial {
            self.bytes = vec![0; initial * SLOT_BYTES];
            self.buffer_slots = initial;
        } else if self.entries > 0 {
            self.bytes.fill(0);
        }
        self.entries = 0;
        self.latest_offset = -1;
        self.lookups = 0;
        self.probes = 0;
    }

    /// Records `offset` as the last offset of `key`. Panics when a new key finds the map full:
    /// callers stop at [`SkimpyOffsetMap::slots`] times the load factor, as Kafka's do.
    pub fn put(&mut self, key: &[u8], offset: i64) {
        assert!(self.entries < self.slots_max, "put into a full offset map");
        if self.buffer_slots < self.slots_max && (self.entries + 1) * 2 > self.buffer_slots {
            self.grow();
        }
        let hash = digest(key);
        self.lookups += 1;
        self.put_hash(&hash, offset);
        self.latest_offset = offset;
    }

    /// Doubles the buffer (at most to the configured size) and places every key again.
    fn grow(&mut self) {
        let slots = self.buffer_slots.saturating_mul(2).min(self.slots_max);
        let old = std::mem::replace(&mut self.bytes, vec![0; slots * SLOT_BYTES]);
        self.buffer_slots = slots;
        self.entries = 0;
        // Re-placing is not a lookup: Kafka's collision rate counts the cleaner's own.
        let probes = self.probes;
        for slot in old.chunks_exact(SLOT_BYTES) {
            if slot.iter().any(|byte| *byte != 0) {
                let mut hash = [0; HASH_BYTES];
                hash.copy_from_slice(&slot[..HASH_BYTES]);
                let mut offset = [0; 8];
                offset.copy_from_slice(&slot[HASH_BYTES..]);
                self.put_hash(&hash, i64::from_be_bytes(offset));
            }
        }
        self.probes = probes;
    }

    fn put_hash(&mut self, hash: &[u8; HASH_BYTES], offset: i64) {
        let mut attempt = 0;
        loop {
            let position = self.position_of(hash, attempt);
            let slot = &mut self.bytes[position..position + SLOT_BYTES];
            if slot.iter().all(|byte| *byte == 0) {
                slot[..HASH_BYTES].copy_from_slice(hash);
                slot[HASH_BYTES..].copy_from_slice(&offset.to_be_bytes());
                self.entries += 1;
                break;
            }
            if slot[..HASH_BYTES] == *hash {
                slot[HASH_BYTES..].copy_from_slice(&offset.to_be_bytes());
                break;
            }
            attempt += 1;
        }
    }

    /// The last offset recorded for `key`, or -1 when the key is not in the map.
    pub fn get(&mut self, key: &[u8]) -> i64 {
        let hash = digest(key);
        self.lookups += 1;
        let mut attempt = 0;
        // At most `slots` probes: Kafka's sequence visits every slot within that many steps
        // once the digest windows are exhausted, and the map is never full.
        while attempt <= self.buffer_slots + HASH_BYTES {
            let position = self.position_of(&hash, attempt);
            let slot = &self.bytes[position..position + SLOT_BYTES];
            if slot.iter().all(|byte| *byte == 0) {
                return -1;
            }
            if slot[..HASH_BYTES] == hash {
                let mut offset = [0; 8];
                offset.copy_from_slice(&slot[HASH_BYTES..]);
                return i64::from_be_bytes(offset);
            }
            attempt += 1;
        }
        -1
    }

    /// The byte position of probe `attempt` for `hash` (Kafka's `positionOf`).
    fn position_of(&mut self, hash: &[u8; HASH_BYTES], attempt: usize) -> usize {
        self.probes += 1;
        let window = attempt.min(HASH_BYTES - 4);
        let mut int = [0; 4];
        int.copy_from_slice(&hash[window..window + 4]);
        let probe = i64::from(i32::from_be_bytes(int))
            + i64::try_from(attempt.saturating_sub(HASH_BYTES - 4)).unwrap_or(i64::MAX / 2);
        // Kafka's `Utils.abs` of an int: the probe wraps as Java's int addition does.
        let probe = probe as i32;
        let abs = if probe == i32::MIN { 0 } else { probe.unsigned_abs() as usize };
        (abs % self.buffer_slots) * SLOT_BYTES
    }
}

fn digest(key: &[u8]) -> [u8; HASH_BYTES] {
    Md5::digest(key).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's `OffsetMapTest.testBasicValidation` and `testClear`: every key put is found
    /// with its offset, overwrites replace, and clear empties the map.
    #[test]
    fn keys_are_found_overwritten_and_cleared() {
        let mut map = SkimpyOffsetMap::new(4096 * SLOT_BYTES);
        for i in 0..3000_i64 {
            map.put(i.to_string().as_bytes(), i);
        }
        assert_eq!(map.len(), 3000);
        for i in 0..3000_i64 {
            assert_eq!(map.get(i.to_string().as_bytes()), i);
        }
        map.put(b"7", 9000);
        assert_eq!((map.get(b"7"), map.len(), map.latest_offset()), (9000, 3000, 9000));
        assert_eq!(map.get(b"no such key"), -1);
        map.clear();
        assert_eq!((map.get(b"7"), map.len(), map.latest_offset()), (-1, 0, -1));
    }

    /// Filled to the last slot, every key is still found (the probe sequence reaches every slot).
    #[test]
    fn a_map_filled_to_its_last_slot_finds_every_key() {
        let mut map = SkimpyOffsetMap::new(97 * SLOT_BYTES);
        assert_eq!(map.slots(), 97);
        for i in 0..97_i64 {
            map.put(format!("key-{i}").as_bytes(), i * 10);
        }
        assert!((map.utilization() - 1.0).abs() < f64::EPSILON);
        for i in 0..97_i64 {
            assert_eq!(map.get(format!("key-{i}").as_bytes()), i * 10);
        }
        assert_eq!(map.get(b"absent"), -1);
    }

    /// The buffer starts small, doubles as keys arrive (every key still found, with its last
    /// offset), stops at the configured size, and is given back by `clear`.
    #[test]
    fn the_buffer_grows_to_the_configured_size_and_clear_gives_it_back() {
        let slots_max = 100_000;
        let mut map = SkimpyOffsetMap::new(slots_max * SLOT_BYTES);
        let initial = map.buffer_bytes();
        assert_eq!(initial, INITIAL_BYTES_MAX / SLOT_BYTES * SLOT_BYTES);
        assert_eq!(map.slots(), slots_max);
        for i in 0..90_000_i64 {
            map.put(format!("key-{i}").as_bytes(), i);
        }
        map.put(b"key-7", 1_000_000);
        assert_eq!(map.buffer_bytes(), slots_max * SLOT_BYTES, "grown to the configured size");
        assert_eq!(map.len(), 90_000);
        for i in 0..90_000_i64 {
            let expected = if i == 7 { 1_000_000 } else { i };
            assert_eq!(map.get(format!("key-{i}").as_bytes()), expected, "key-{i}");
        }
        assert!((map.utilization() - 0.9).abs() < 1e-9);
        map.clear();
        assert_eq!((map.buffer_bytes(), map.len(), map.get(b"key-1")), (initial, 0, -1));
        // A small round stays in the initial buffer.
        for i in 0..1000_i64 {
            map.put(format!("k{i}").as_bytes(), i);
        }
        assert_eq!(map.buffer_bytes(), initial);
    }

    /// The digest is MD5's, as Kafka's default `log.cleaner.hash.algorithm`.
    #[test]
    fn the_digest_is_md5() {
        assert_eq!(
            digest(b"abc"),
            [
                0x90, 0x01, 0x50, 0x98, 0x3c, 0xd2, 0x4f, 0xb0, 0xd6, 0x96, 0x3f, 0x7d, 0x28, 0xe1,
                0x7f, 0x72
            ]
        );
    }
}
