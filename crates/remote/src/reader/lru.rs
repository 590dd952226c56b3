//! Byte buffers by key, least recently used first out, within a byte bound: the store of the
//! reader's index and chunk caches.

use std::collections::BTreeMap;

use bytes::Bytes;

/// Buffers by key with their last use; [`ByteLru::insert`] evicts down to a byte bound.
#[derive(Debug)]
pub(super) struct ByteLru<K> {
    entries: BTreeMap<K, (u64, Bytes)>,
    bytes: usize,
    clock: u64,
}

impl<K> Default for ByteLru<K> {
    fn default() -> Self {
        Self { entries: BTreeMap::new(), bytes: 0, clock: 0 }
    }
}

impl<K: Ord + Copy> ByteLru<K> {
    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The buffer of `key`, now the most recently used.
    pub(super) fn get(&mut self, key: &K) -> Option<Bytes> {
        self.clock += 1;
        let clock = self.clock;
        let (used, bytes) = self.entries.get_mut(key)?;
        *used = clock;
        Some(bytes.clone())
    }

    /// Holds `bytes` under `key`, evicting the least recently used until all fit in
    /// `bytes_max`; a buffer larger than the bound is not held.
    pub(super) fn insert(&mut self, key: K, bytes: &Bytes, bytes_max: usize) {
        if bytes.len() > bytes_max {
            return;
        }
        if let Some((_, replaced)) = self.entries.remove(&key) {
            self.bytes -= replaced.len();
        }
        while self.bytes + bytes.len() > bytes_max {
            let Some((&oldest, _)) = self.entries.iter().min_by_key(|(_, (used, _))| *used) else {
                break;
            };
            if let Some((_, evicted)) = self.entries.remove(&oldest) {
                self.bytes -= evicted.len();
            }
        }
        self.clock += 1;
        self.bytes += bytes.len();
        self.entries.insert(key, (self.clock, bytes.clone()));
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::ByteLru;

    #[test]
    fn the_least_recently_used_go_first_and_the_bound_holds() {
        let mut lru = ByteLru::default();
        for key in 0..3_u32 {
            lru.insert(key, &Bytes::from(vec![0u8; 10]), 30);
        }
        assert_eq!(lru.bytes(), 30);
        assert!(lru.get(&0).is_some(), "0 is now the most recent");
        lru.insert(3, &Bytes::from(vec![0u8; 10]), 30);
        assert_eq!((lru.get(&1), lru.bytes()), (None, 30), "1 went: the least recent");
        assert!(lru.get(&0).is_some() && lru.get(&2).is_some() && lru.get(&3).is_some());
        lru.insert(4, &Bytes::from(vec![0u8; 31]), 30);
        assert_eq!((lru.get(&4), lru.bytes()), (None, 30), "larger than the bound: not held");
        lru.insert(2, &Bytes::from(vec![0u8; 5]), 30);
        assert_eq!(lru.bytes(), 25, "a replaced buffer's bytes leave the count, nothing evicted");
        assert!(lru.get(&0).is_some() && lru.get(&3).is_some());
    }
}
