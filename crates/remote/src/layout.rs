//! Where a partition's objects live in the bucket, and the names of segment objects.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use object_store::path::Path;
use seglog_storage::splitmix::{GAMMA, mix};

/// A remote segment's id (Kafka's `RemoteLogSegmentId`): 128 bits, written as 32 hex digits.
/// Ids are made so that two uploads never share one; the create-only PUT of a segment's objects
/// would refuse a collision anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegmentId(pub u128);

impl SegmentId {
    /// A new id from the clock, the process id and a counter, mixed (SplitMix64's finalizer).
    pub fn generate() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos() as u64);
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        let high = mix(nanos ^ u64::from(std::process::id()).rotate_left(32));
        let low = mix(high ^ count.wrapping_mul(GAMMA));
        Self((u128::from(high) << 64) | u128::from(low))
    }

    /// Parses 32 hex digits.
    pub fn parse(text: &str) -> Option<Self> {
        (text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u128::from_str_radix(text, 16).ok().map(Self))
            .flatten()
    }
}

impl fmt::Display for SegmentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl serde::Serialize for SegmentId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SegmentId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("segment id {text:?} is not 32 hex digits"))
        })
    }
}

/// The objects of one remote segment: the local segment's files, its producer snapshot and its
/// slice of the leader-epoch checkpoint, each one object.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum ObjectKind {
    /// `.log`: the record batches, byte for byte.
    #[serde(rename = "log")]
    Log,
    /// `.index`: the offset index.
    #[serde(rename = "index")]
    Index,
    /// `.timeindex`: the time index.
    #[serde(rename = "timeindex")]
    TimeIndex,
    /// `.txnindex`: the aborted transactions.
    #[serde(rename = "txnindex")]
    TxnIndex,
    /// `.snapshot`: the producer state at the segment's end.
    #[serde(rename = "snapshot")]
    ProducerSnapshot,
    /// `.leader-epoch-checkpoint`: the leader epochs of the segment's offsets.
    #[serde(rename = "leader-epoch-checkpoint")]
    LeaderEpochs,
}

impl ObjectKind {
    /// Every kind, in the order they are uploaded.
    pub const ALL: [Self; 6] = [
        Self::Log,
        Self::Index,
        Self::TimeIndex,
        Self::TxnIndex,
        Self::ProducerSnapshot,
        Self::LeaderEpochs,
    ];

    /// The object name's suffix, after the dot.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::Log => "log",
            Self::Index => "index",
            Self::TimeIndex => "timeindex",
            Self::TxnIndex => "txnindex",
            Self::ProducerSnapshot => "snapshot",
            Self::LeaderEpochs => "leader-epoch-checkpoint",
        }
    }

    /// The kind of a suffix.
    pub fn from_suffix(suffix: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.suffix() == suffix)
    }
}

/// One partition's folder in the bucket: `<prefix>/<topic>-<partition>-<topic id>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLayout {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The topic id, as the folder name shows it (a deleted and re-created topic gets a new
    /// folder).
    pub topic_id: String,
    dir: Path,
}

impl PartitionLayout {
    /// The folder of `topic`-`partition` (topic id `topic_id`) under `prefix`.
    pub fn new(prefix: &str, topic: &str, partition: i32, topic_id: &str) -> Self {
        let name = format!("{topic}-{partition}-{topic_id}");
        let dir = if prefix.is_empty() {
            Path::from(name.as_str())
        } else {
            Path::from(prefix).join(name.as_str())
        };
        Self { topic: topic.to_owned(), partition, topic_id: topic_id.to_owned(), dir }
    }

    /// The partition's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest's key.
    pub fn manifest_key(&self) -> Path {
        self.dir.clone().join("manifest.json")
    }

    /// The folder of the segment objects.
    pub fn segments_dir(&self) -> Path {
        self.dir.clone().join("segments")
    }

    /// The key of one object of a segment.
    pub fn object_key(&self, base_offset: i64, id: SegmentId, kind: ObjectKind) -> Path {
        self.segments_dir().join(format!("{base_offset:020}-{id}.{}", kind.suffix()).as_str())
    }

    /// The segment id and kind of an object key under [`PartitionLayout::segments_dir`], or
    /// `None` for any other name.
    pub fn parse_object_key(&self, key: &Path) -> Option<(i64, SegmentId, ObjectKind)> {
        let name = key.filename()?;
        let (stem, suffix) = name.split_once('.')?;
        let (base, id) = stem.split_once('-')?;
        if base.len() != 20 {
            return None;
        }
        Some((base.parse().ok()?, SegmentId::parse(id)?, ObjectKind::from_suffix(suffix)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_name_the_partition_the_offset_and_the_id_and_parse_back() {
        let layout = PartitionLayout::new("tiered/a", "orders", 3, "AAAAAAAAAAAAAAAAAAAAAQ");
        let id = SegmentId(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        let key = layout.object_key(1_234, id, ObjectKind::TimeIndex);
        assert_eq!(
            key.as_ref(),
            "tiered/a/orders-3-AAAAAAAAAAAAAAAAAAAAAQ/segments/00000000000000001234-0123456789abcdef0011223344556677.timeindex"
        );
        assert_eq!(layout.parse_object_key(&key), Some((1_234, id, ObjectKind::TimeIndex)));
        assert_eq!(
            layout.manifest_key().as_ref(),
            "tiered/a/orders-3-AAAAAAAAAAAAAAAAAAAAAQ/manifest.json"
        );
        for bad in [
            "x.log",
            "1-2.log",
            "00000000000000001234-zz.log",
            "00000000000000001234-0123456789abcdef0011223344556677.bin",
        ] {
            assert_eq!(layout.parse_object_key(&layout.segments_dir().join(bad)), None, "{bad}");
        }
    }

    #[test]
    fn generated_ids_differ() {
        let ids: std::collections::BTreeSet<_> = (0..1000).map(|_| SegmentId::generate()).collect();
        assert_eq!(ids.len(), 1000);
        let id = SegmentId::generate();
        assert_eq!(SegmentId::parse(&id.to_string()), Some(id));
    }
}
