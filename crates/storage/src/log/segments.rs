//! The segments of one partition, ordered by base offset (Kafka's `LogSegments`). The active
//! segment is the one with the greatest base offset.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::error::{Error, Result};
use crate::segment::LogSegment;

/// An ordered map from base offset to segment (Kafka's `LogSegments`).
///
/// Segments are boxed: a `BTreeMap` node holds eleven values and nodes filled in order sit
/// about half full, so an inline `LogSegment` (hundreds of bytes) cost about twice its size per
/// segment; a box costs its size and a pointer (`tests/segment_memory.rs`).
#[derive(Debug, Default)]
pub struct LogSegments {
    segments: BTreeMap<i64, Box<LogSegment>>,
}

impl LogSegments {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `segment`, replacing (and returning) one with the same base offset.
    pub fn add(&mut self, segment: LogSegment) -> Option<LogSegment> {
        self.segments.insert(segment.base_offset(), Box::new(segment)).map(|old| *old)
    }

    /// Removes the segment at `base_offset`.
    pub fn remove(&mut self, base_offset: i64) -> Option<LogSegment> {
        self.segments.remove(&base_offset).map(|segment| *segment)
    }

    /// Removes every segment, returning them in order.
    pub fn clear(&mut self) -> Vec<LogSegment> {
        std::mem::take(&mut self.segments).into_values().map(|segment| *segment).collect()
    }

    /// Whether a segment starts at `base_offset`.
    pub fn contains(&self, base_offset: i64) -> bool {
        self.segments.contains_key(&base_offset)
    }

    /// The segment at `base_offset`.
    pub fn get(&self, base_offset: i64) -> Option<&LogSegment> {
        self.segments.get(&base_offset).map(|segment| &**segment)
    }

    /// The segment at `base_offset`, mutably.
    pub fn get_mut(&mut self, base_offset: i64) -> Option<&mut LogSegment> {
        self.segments.get_mut(&base_offset).map(|segment| &mut **segment)
    }

    /// Number of segments.
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// Whether there are no segments.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// The segments in offset order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &LogSegment> {
        self.segments.values().map(|segment| &**segment)
    }

    /// The segments in offset order, mutably.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut LogSegment> {
        self.segments.values_mut().map(|segment| &mut **segment)
    }

    /// The base offsets in order.
    pub fn base_offsets(&self) -> Vec<i64> {
        self.segments.keys().copied().collect()
    }

    /// The oldest segment.
    pub fn first_segment(&self) -> Option<&LogSegment> {
        self.segments.values().next().map(|segment| &**segment)
    }

    /// The active segment: the one with the greatest base offset.
    pub fn active_segment(&self) -> Option<&LogSegment> {
        self.segments.values().next_back().map(|segment| &**segment)
    }

    /// The active segment, mutably.
    pub fn active_segment_mut(&mut self) -> Option<&mut LogSegment> {
        self.segments.values_mut().next_back().map(|segment| &mut **segment)
    }

    /// The segment with the greatest base offset <= `offset` (Kafka's `floorSegment`).
    pub fn floor_segment(&self, offset: i64) -> Option<&LogSegment> {
        self.segments.range(..=offset).next_back().map(|(_, segment)| &**segment)
    }

    /// The segment with the greatest base offset < `offset` (Kafka's `lowerSegment`).
    pub fn lower_segment(&self, offset: i64) -> Option<&LogSegment> {
        self.segments.range(..offset).next_back().map(|(_, segment)| &**segment)
    }

    /// The segment with the smallest base offset > `offset` (Kafka's `higherSegment`).
    pub fn higher_segment(&self, offset: i64) -> Option<&LogSegment> {
        self.segments.range((Bound::Excluded(offset), Bound::Unbounded)).next().map(|(_, s)| &**s)
    }

    /// Every segment with a base offset > `offset`, in order (Kafka's `higherSegments`).
    pub fn higher_segments(&self, offset: i64) -> impl Iterator<Item = &LogSegment> {
        self.segments.range((Bound::Excluded(offset), Bound::Unbounded)).map(|(_, s)| &**s)
    }

    /// The segments from the one holding `from` (or the first) up to, not including, base `to`
    /// (Kafka's `values(from, to)`): empty when `from == to`, an error when `to < from`.
    pub fn values(&self, from: i64, to: i64) -> Result<Vec<&LogSegment>> {
        if to < from {
            return Err(Error::InvalidArgument(format!(
                "invalid segment range: to ({to}) must be >= from ({from})"
            )));
        }
        if from == to {
            return Ok(Vec::new());
        }
        let start = self.segments.range(..=from).next_back().map_or(i64::MIN, |(base, _)| *base);
        Ok(self.segments.range(start..to).map(|(_, segment)| &**segment).collect())
    }

    /// The non-active segments from the one holding `from` (Kafka's `nonActiveLogSegmentsFrom`).
    pub fn non_active_from(&self, from: i64) -> Vec<&LogSegment> {
        match self.active_segment() {
            Some(active) if from <= active.base_offset() => {
                self.values(from, active.base_offset()).unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    /// Total bytes of every segment, as 64 bits.
    pub fn size_bytes(&self) -> u64 {
        self.segments.values().map(|segment| u64::from(segment.size_bytes())).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use super::*;
    use crate::io::{Fs, SimFs};
    use crate::segment::SegmentConfig;

    fn dir() -> PathBuf {
        PathBuf::from("/d/t-0")
    }

    fn segment(fs: &SimFs, base_offset: i64) -> LogSegment {
        let config = SegmentConfig { index_bytes_max: 1024, ..SegmentConfig::default() };
        LogSegment::create(Arc::new(fs.clone()), &dir(), base_offset, config, 0).unwrap()
    }

    fn fs() -> SimFs {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/d/t-0")).unwrap();
        fs
    }

    fn bases<'a>(segments: impl IntoIterator<Item = &'a LogSegment>) -> Vec<i64> {
        segments.into_iter().map(LogSegment::base_offset).collect()
    }

    /// `testBasicOperations`.
    #[test]
    fn basic_operations() {
        let fs = fs();
        let mut segments = LogSegments::new();
        assert!(segments.is_empty());
        assert!(segments.add(segment(&fs, 1)).is_none());
        assert!(segments.contains(1));
        assert_eq!(segments.get(1).unwrap().base_offset(), 1);
        // Adding at the same base offset replaces.
        let replacement =
            LogSegment::open(Arc::new(fs.clone()), &dir(), 1, SegmentConfig::default(), 0)
                .unwrap()
                .0;
        assert!(segments.add(replacement).is_some());
        assert_eq!(segments.len(), 1);
        assert!(segments.remove(1).is_some());
        assert!(segments.remove(1).is_none());
        segments.add(segment(&fs, 2));
        segments.add(segment(&fs, 3));
        assert_eq!(bases(&segments.clear()), [2, 3]);
        assert!(segments.is_empty());
    }

    fn four(fs: &SimFs) -> LogSegments {
        let mut segments = LogSegments::new();
        for base in [1, 2, 3, 4] {
            segments.add(segment(fs, base));
        }
        segments
    }

    /// `testSegmentAccess`, including the `values(from, to)` examples of spec §7.1.
    #[test]
    fn segment_access() {
        let fs = fs();
        let segments = four(&fs);
        assert_eq!(segments.first_segment().unwrap().base_offset(), 1);
        assert_eq!(segments.active_segment().unwrap().base_offset(), 4);
        assert_eq!(segments.base_offsets(), [1, 2, 3, 4]);
        assert_eq!(bases(segments.values(1, 2).unwrap()), [1]);
        assert_eq!(bases(segments.values(1, 4).unwrap()), [1, 2, 3]);
        assert_eq!(bases(segments.values(2, 4).unwrap()), [2, 3]);
        assert_eq!(bases(segments.values(4, 5).unwrap()), [4]);
        assert!(segments.values(3, 3).unwrap().is_empty());
        assert!(segments.values(3, 2).is_err());
        assert_eq!(bases(segments.values(0, 3).unwrap()), [1, 2], "no floor: from the first");
        assert_eq!(bases(segments.non_active_from(2)), [2, 3]);
        assert!(segments.non_active_from(5).is_empty());
    }

    /// `testClosestMatchOperations` and `testHigherSegments`.
    #[test]
    fn closest_matches() {
        let fs = fs();
        let mut segments = LogSegments::new();
        for base in [10, 20, 30] {
            segments.add(segment(&fs, base));
        }
        let base = |segment: Option<&LogSegment>| segment.map(LogSegment::base_offset);
        assert_eq!(base(segments.floor_segment(20)), Some(20));
        assert_eq!(base(segments.floor_segment(25)), Some(20));
        assert_eq!(base(segments.floor_segment(5)), None);
        assert_eq!(base(segments.lower_segment(20)), Some(10));
        assert_eq!(base(segments.lower_segment(10)), None);
        assert_eq!(base(segments.higher_segment(20)), Some(30));
        assert_eq!(base(segments.higher_segment(30)), None);
        assert_eq!(bases(segments.higher_segments(10)), [20, 30]);
        assert_eq!(bases(segments.higher_segments(9)), [10, 20, 30]);
        assert!(segments.higher_segments(30).next().is_none());
    }

    /// `testSizeForLargeLogs`: the total is a 64-bit sum.
    #[test]
    fn size_is_64_bit() {
        let sizes = [u64::from(i32::MAX as u32); 3];
        assert!(sizes.iter().sum::<u64>() > u64::from(u32::MAX));
        let fs = fs();
        let segments = four(&fs);
        assert_eq!(segments.size_bytes(), 0);
    }
}
